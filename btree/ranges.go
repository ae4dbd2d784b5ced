package btree

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/par"

	"github.com/warpkv/warpkv/prim"
)

// rangeOf returns the pairs with lo <= key <= hi in key order, at most
// limit of them, walking the leaf chain.
func (t *cpuTree) rangeOf(lo, hi uint64, limit int) (keys, values []uint64, err error) {
	t.walk(lo, hi, limit, func(k, v uint64) {
		keys, values = append(keys, k), append(values, v)
	})
	return keys, values, nil
}

// ranges answers the range queries in two passes over the workers (count,
// scan, write).
func (t *cpuTree) ranges(los, his []uint64, limit int) (keys, values []uint64, offsets []int, tm engine.Timings, err error) {
	c := startHostClock()
	q := len(los)
	counts := make([]uint64, q+1)
	par.For(q, groupGrain, t.opt.workers, func(a, b int) {
		for i := a; i < b; i++ {
			var n uint64
			t.walk(los[i], his[i], limit, func(uint64, uint64) { n++ })
			counts[i] = n
		}
	})
	if err := prim.ScanExclusive(t.eng, counts, counts); err != nil {
		return nil, nil, nil, tm, err
	}
	keys = make([]uint64, counts[q])
	values = make([]uint64, counts[q])
	par.For(q, groupGrain, t.opt.workers, func(a, b int) {
		for i := a; i < b; i++ {
			w := counts[i]
			t.walk(los[i], his[i], limit, func(k, v uint64) {
				keys[w], values[w] = k, v
				w++
			})
		}
	})
	offsets = make([]int, q+1)
	for i, c := range counts {
		offsets[i] = int(c)
	}
	return keys, values, offsets, finishHostClock(c, "ranges", q), nil
}

// walk calls fn on the pairs with lo <= key <= hi in key order, at most
// limit of them (limit <= 0: no limit), following the leaf chain. Cost: O(height * log order + pairs + leaves).
func (t *cpuTree) walk(lo, hi uint64, limit int, fn func(k, v uint64)) {
	if t.root == nilNode || lo > hi {
		return
	}
	s := &t.st
	leaf := t.findLeaf(lo)
	c := s.count(leaf)
	j := lowerBound(s.keys(leaf)[:c], lo)
	n := 0
	for leaf != nilNode {
		keys, slots := s.keys(leaf)[:c], s.slots(leaf)[:c]
		for ; j < c; j++ {
			if keys[j] > hi || (limit > 0 && n == limit) {
				return
			}
			fn(keys[j], slots[j])
			n++
		}
		leaf = s.next(leaf)
		if leaf != nilNode {
			c, j = s.count(leaf), 0
		}
	}
}
