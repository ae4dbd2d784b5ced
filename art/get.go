package art

import (
	"bytes"
	"math/bits"
	"sync/atomic"

	"github.com/warpkv/warpkv/internal/par"
)

// findLeaf returns the leaf of key k, or 0: the walk of a lookup, one per
// key (art.cu's ag_get does the same). Prefix bytes past the stored ones
// are not compared on the way: the whole key is, at the leaf. Cost:
// O(depth) node reads and one key comparison.
func (s *store) findLeaf(k []byte) uint64 {
	w := s.width
	l := s.root[rootSlot(k, w)]
	D := min(w, len(k))
	for l != 0 {
		if isLeaf(l) {
			if bytes.Equal(s.leafKey(l), k) {
				return l
			}
			return 0
		}
		r := s.rec(l)
		plen := plenOf(r)
		if len(k) < D+plen || !bytes.Equal(k[D:D+min(plen, prefixStored)], prefixBytes(r)) {
			return 0
		}
		d := D + plen
		if len(k) == d {
			l = r[wTerm]
		} else {
			l, _ = findChild(r, linkKind(l), int(k[d]))
		}
		D = d + 1
	}
	return 0
}

// lookup sets values[i] and found[i] for every key of kb. Cost: one walk
// per key over the workers.
func (s *store) lookup(kb Keys, values []uint64, found []bool, workers int) {
	par.For(kb.Len(), keyGrain, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if l := s.findLeaf(kb.At(i)); l != 0 {
				values[i], found[i] = s.leafValue(l), true
			} else {
				values[i], found[i] = 0, false
			}
		}
	})
}

// conflictSize is the slots of the update conflict table for n keys: a
// power of two of at least twice n, so probes stay short for any batch.
func conflictSize(n int) int { return max(64, 1<<bits.Len(uint(2*n-1))) }

// conflictHash is the first slot of leaf l in a table of 2^b slots.
func conflictHash(l uint64, b int) uint64 { return (l * 0x9E3779B97F4A7C15) >> (64 - b) }

// update replaces the values of the present keys of kb in CuART's two
// stages: (1) each key's walk finds its leaf and records its batch
// position in the conflict table, which keeps the highest position per
// leaf (linear probing, a compare-and-swap on the leaf, an atomic max on
// the position); (2) each key whose position the table kept writes its
// value, so the batch's last occurrence wins with one writer per leaf.
// found[i] says whether key i is present. Cost: two passes of one walk or
// probe per key, a table of conflictSize(n) slots.
func (s *store) update(kb Keys, vals []uint64, found []bool, workers int) int {
	n := kb.Len()
	leaf := make([]uint64, n)
	size := conflictSize(n)
	b := bits.Len(uint(size)) - 1
	tk := make([]uint64, size)
	tp := make([]uint32, size)
	mask := uint64(size - 1)
	var hits atomic.Int64
	par.For(n, keyGrain, workers, func(lo, hi int) {
		c := 0
		for i := lo; i < hi; i++ {
			l := s.findLeaf(kb.At(i))
			leaf[i], found[i] = l, l != 0
			if l == 0 {
				continue
			}
			c++
			h := conflictHash(l, b)
			for {
				if atomic.CompareAndSwapUint64(&tk[h], 0, l) || atomic.LoadUint64(&tk[h]) == l {
					for {
						old := atomic.LoadUint32(&tp[h])
						if old >= uint32(i+1) || atomic.CompareAndSwapUint32(&tp[h], old, uint32(i+1)) {
							break
						}
					}
					break
				}
				h = (h + 1) & mask
			}
		}
		hits.Add(int64(c))
	})
	par.For(n, keyGrain, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			l := leaf[i]
			if l == 0 {
				continue
			}
			h := conflictHash(l, b)
			for tk[h] != l {
				h = (h + 1) & mask
			}
			if tp[h] == uint32(i+1) {
				s.setLeafValue(l, vals[i])
			}
		}
	})
	return int(hits.Load())
}
