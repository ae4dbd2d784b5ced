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

// ranges answers the half-open range queries in two passes over the
// workers (count, scan, write) into into (nil: a new Result).
func (t *cpuTree) ranges(into *Result, los, his []uint64, limit int) (*Result, engine.Timings, error) {
	c := startHostClock()
	q := len(los)
	var tm engine.Timings
	counts := make([]uint64, q+1)
	par.For(q, groupGrain, t.opt.workers, func(a, b int) {
		for i := a; i < b; i++ {
			var n uint64
			lo, hi := inclusive(los[i], his[i])
			t.walk(lo, hi, limit, func(uint64, uint64) { n++ })
			counts[i] = n
		}
	})
	if err := prim.ScanExclusive(t.eng, counts, counts); err != nil {
		return nil, tm, err
	}
	r, err := sizeResult(into, q, int(counts[q]))
	if err != nil {
		return nil, tm, err
	}
	par.For(q, groupGrain, t.opt.workers, func(a, b int) {
		for i := a; i < b; i++ {
			w := counts[i]
			lo, hi := inclusive(los[i], his[i])
			t.walk(lo, hi, limit, func(k, v uint64) {
				r.Keys[w], r.Values[w] = k, v
				w++
			})
		}
	})
	for i, c := range counts {
		r.Offsets[i] = int(c)
	}
	return r, finishHostClock(c, "ranges", q), nil
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
