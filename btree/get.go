package btree

import (
	"fmt"
	"time"
	"unsafe"

	"warpkv/internal/par"
)

// Get looks up every key: values[i] is the value of keys[i] and found[i]
// whether it is in the tree (values[i] is 0 when not). On a closed tree
// nothing is found. Cost: O(len(keys) * height * log order) spread over the
// workers, one search per key; on the GPU engine one thread per key, plus
// a transfer each way. Get panics if the GPU engine fails (a device error,
// or out of device memory); Lookup returns that error instead.
func (t *Tree) Get(keys []uint64) (values []uint64, found []bool) {
	values = make([]uint64, len(keys))
	found = make([]bool, len(keys))
	if err := t.Lookup(keys, values, found); err != nil {
		panic(err)
	}
	return values, found
}

// Lookup is Get into caller-provided slices of len(keys) (their previous
// contents are overwritten), returning the GPU engine's errors. It fails
// only on a length mismatch or on the GPU engine.
func (t *Tree) Lookup(keys, values []uint64, found []bool) error {
	if len(values) != len(keys) || len(found) != len(keys) {
		return fmt.Errorf("btree: lookup: %d keys, %d values, %d found flags", len(keys), len(values), len(found))
	}
	t0 := time.Now()
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.root == nilNode {
		clear(values)
		clear(found)
		t.setLast(cpuTimes("lookup", len(keys), t0, time.Time{}))
		return nil
	}
	if t.g != nil {
		bt := BatchTimes{Op: "lookup", Keys: len(keys)}
		if err := t.g.lookup(t.root, keys, values, found, &bt); err != nil {
			return fmt.Errorf("btree: lookup on the gpu: %w", err)
		}
		bt.Total = time.Since(t0)
		t.setLast(bt)
		return nil
	}
	defer func() { t.setLast(cpuTimes("lookup", len(keys), t0, time.Time{})) }()
	s := &t.st
	par.For(len(keys), keyGrain, t.opt.workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			leaf := t.findLeaf(keys[i])
			c := s.count(leaf)
			lk := s.keys(leaf)[:c]
			values[i], found[i] = 0, false
			if j := lowerBound(lk, keys[i]); j < c && lk[j] == keys[i] {
				values[i], found[i] = s.slots(leaf)[j], true
			}
		}
	})
	return nil
}

// The GPU engine writes found flags as bytes 0 and 1.
var _ [1]struct{} = [unsafe.Sizeof(false)]struct{}{}
