package btree

import (
	"fmt"

	"warpkv/internal/par"

	"warpkv/prim"
)

// Range returns the pairs with lo <= key <= hi in key order, at most limit
// of them (limit <= 0: no limit). On a closed tree or when lo > hi it
// returns nothing. Cost: O(height * log order + result + leaves walked).
// On the GPU engine it is Ranges of one query, and panics if the device
// fails; use Ranges to get the error.
func (t *Tree) Range(lo, hi uint64, limit int) (keys, values []uint64) {
	if t.g != nil {
		k, v, _, err := t.Ranges([]uint64{lo}, []uint64{hi}, limit)
		if err != nil {
			panic(err)
		}
		if len(k) == 0 {
			return nil, nil
		}
		return k, v
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	t.walk(lo, hi, limit, func(k, v uint64) {
		keys, values = append(keys, k), append(values, v)
	})
	return keys, values
}

// Ranges answers many range queries in two passes: count each query's
// pairs (at most limit each, limit <= 0: no limit), exclusive scan of the
// counts, then write each query's pairs at its offset. Query i's pairs are
// keys[offsets[i]:offsets[i+1]] and values[offsets[i]:offsets[i+1]].
// Cost: twice that of the queries' Range calls, spread over the workers,
// plus a scan. On the GPU engine the passes are kernels of one thread per
// query and the scan is prim's.
func (t *Tree) Ranges(los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error) {
	if len(los) != len(his) {
		return nil, nil, nil, fmt.Errorf("btree: ranges: %d lows but %d highs", len(los), len(his))
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.g != nil && t.root != nilNode && len(los) > 0 {
		keys, values, offsets, err = t.g.ranges(t.root, los, his, limit)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("btree: ranges on the gpu: %w", err)
		}
		return keys, values, offsets, nil
	}
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
		return nil, nil, nil, fmt.Errorf("btree: ranges: %w", err)
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
	return keys, values, offsets, nil
}

// walk calls fn on the pairs with lo <= key <= hi in key order, at most
// limit of them (limit <= 0: no limit), following the leaf chain. The
// caller holds the read lock. Cost: O(height * log order + pairs + leaves).
func (t *Tree) walk(lo, hi uint64, limit int, fn func(k, v uint64)) {
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
