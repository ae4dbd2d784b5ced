package art

import (
	"fmt"
	"math"

	"github.com/warpkv/warpkv/internal/par"
)

// Batches of more than 4 GiB of key bytes. Keys' offsets are 32-bit; past
// 4 GiB they wrap (Pack and packFunc write them so), and since no key is
// longer than MaxKeyLen < 2^16 bytes, every offset's true value is still
// known: it rises by less than 2^16 a key, so its bit 31 flips exactly
// when the true offset crosses a multiple of 2^31. The engines split such
// a batch at those crossings into chunks of at most 2^31 + MaxKeyLen bytes,
// each an ordinary Keys, and apply them in batch order, which gives what
// the whole batch gives (of equal keys the last wins; deletes count
// distinct present keys). The caller never sees the chunks.

// chunkBytes is the window the chunks are cut at: every multiple of it.
const chunkBytes = 1 << 31

// keyChunk is keys [lo, hi) of a long batch as an ordinary batch.
type keyChunk struct {
	lo, hi int
	kb     Keys
}

// isLong reports whether the batch holds more than 4 GiB of key bytes (and
// so needs chunks).
func (k Keys) isLong() bool { return uint64(len(k.Data)) > math.MaxUint32 }

// chunks splits a long batch (isLong) into ordinary batches, or returns an
// error when its offsets do not describe Data. Cost: one pass over the
// offsets and a copy of them (rebased), over GOMAXPROCS goroutines.
func (k Keys) chunks(op string) ([]keyChunk, error) { return k.chunksAt(op, chunkBytes) }

// chunksAt is chunks with the cuts at every multiple of window (a power of
// two above MaxKeyLen and at most chunkBytes; tests use small ones).
func (k Keys) chunksAt(op string, window uint32) ([]keyChunk, error) {
	n := k.Len()
	// The keys where the true offset crosses a multiple of chunkBytes.
	parts := par.Parts(n, checkMinPart, 0)
	cuts := make([][]int, parts)
	par.Ranges(n, parts, func(p, lo, hi int) {
		for i := lo + 1; i <= hi; i++ {
			if (k.Offs[i]^k.Offs[i-1])&window != 0 {
				cuts[p] = append(cuts[p], i)
			}
		}
	})
	bounds := []int{0}
	for _, c := range cuts {
		bounds = append(bounds, c...)
	}
	crossings := len(bounds) - 1
	if bounds[crossings] != n {
		bounds = append(bounds, n)
	}
	// The true offset of key i with c crossings before it.
	base := uint64(k.Offs[0]) &^ uint64(window-1)
	trueOff := func(i, c int) uint64 {
		return base + uint64(c)*uint64(window) + uint64(k.Offs[i]&(window-1))
	}
	if end := trueOff(n, crossings); end > uint64(len(k.Data)) {
		return nil, fmt.Errorf("art: %s: offsets end at byte %d, past the %d data bytes", op, end, len(k.Data))
	}
	out := make([]keyChunk, 0, len(bounds)-1)
	for c := 0; c+1 < len(bounds); c++ {
		lo, hi := bounds[c], bounds[c+1]
		start := trueOff(lo, c)
		offs := make([]uint32, hi-lo+1)
		par.Ranges(hi-lo+1, par.Parts(hi-lo+1, checkMinPart, 0), func(_, a, b int) {
			for i := a; i < b; i++ {
				offs[i] = k.Offs[lo+i] - k.Offs[lo]
			}
		})
		end := start + uint64(offs[hi-lo])
		out = append(out, keyChunk{lo: lo, hi: hi, kb: Keys{Data: k.Data[start:end:end], Offs: offs}})
	}
	return out, nil
}

// The engines' build, insert, update, lookup and remove start with the
// matching function below: for a long batch it applies the chunks through
// the engine's own method and says so (long true, with the result);
// otherwise it returns long false and the engine goes on.

// longBuild is build of a long batch on e: the first chunk built, the
// others inserted.
func longBuild(e backend, kb Keys, vals []uint64) (long bool, err error) {
	if !kb.isLong() {
		return false, nil
	}
	ch, err := kb.chunks("build")
	for i := 0; err == nil && i < len(ch); i++ {
		c := ch[i]
		if i == 0 || e.size() == 0 {
			err = e.build(c.kb, vals[c.lo:c.hi])
		} else {
			_, err = e.insert(c.kb, vals[c.lo:c.hi])
		}
	}
	return true, err
}

// longInsert is insert of a long batch on e; added counts the new keys.
func longInsert(e backend, kb Keys, vals []uint64) (long bool, added int, err error) {
	if !kb.isLong() {
		return false, 0, nil
	}
	ch, err := kb.chunks("insert")
	for i := 0; err == nil && i < len(ch); i++ {
		var n int
		n, err = e.insert(ch[i].kb, vals[ch[i].lo:ch[i].hi])
		added += n
	}
	return true, added, err
}

// longUpdate is update of a long batch on e.
func longUpdate(e backend, kb Keys, vals []uint64, found []bool) (long bool, err error) {
	if !kb.isLong() {
		return false, nil
	}
	ch, err := kb.chunks("update")
	for i := 0; err == nil && i < len(ch); i++ {
		c := ch[i]
		err = e.update(c.kb, vals[c.lo:c.hi], found[c.lo:c.hi])
	}
	return true, err
}

// longLookup is lookup of a long batch on e.
func longLookup(e backend, kb Keys, vals []uint64, found []bool) (long bool, err error) {
	if !kb.isLong() {
		return false, nil
	}
	ch, err := kb.chunks("lookup")
	for i := 0; err == nil && i < len(ch); i++ {
		c := ch[i]
		err = e.lookup(c.kb, vals[c.lo:c.hi], found[c.lo:c.hi])
	}
	return true, err
}

// longRemove is remove of a long batch on e; removed counts the keys
// removed.
func longRemove(e backend, kb Keys) (long bool, removed int, err error) {
	if !kb.isLong() {
		return false, 0, nil
	}
	ch, err := kb.chunks("delete")
	for i := 0; err == nil && i < len(ch) && e.size() > 0; i++ {
		var n int
		n, err = e.remove(ch[i].kb)
		removed += n
	}
	return true, removed, err
}
