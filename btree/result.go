package btree

import (
	"fmt"
	"slices"
	"sync"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Result holds the answers of a batch of range queries (RangesInto): the
// pairs of query i are Keys[j], Values[j] for Offsets[i] <= j <
// Offsets[i+1], in key order.
//
// A Result passed to RangesInto is reused: its arrays are overwritten
// (and grown when short), so an earlier answer's slices hold only until
// the next call into it. One made by Tree.NewResult on the GPU engine
// keeps its arrays in pinned host memory, which the device writes the
// answers into by DMA with no host copy; Free releases it.
type Result struct {
	Keys    []uint64
	Values  []uint64
	Offsets []int

	pin *gpu.HostArrays // the arrays' pinned memory; nil: Go memory
}

// NewResult returns an empty Result to answer batch after batch into
// (RangesInto). On the GPU engine its arrays live in pinned host memory,
// allocated at the first call and grown by a quarter more than asked when
// a call needs more, that the device writes the answers into directly:
// the copy out of the transfer buffers disappears from every call. Free
// it when done (before closing the tree's device). On the CPU engine it
// is an ordinary Result. Cost: nothing until the first call; each growth
// of a pinned array is a cuMemHostAlloc (milliseconds).
func (t *Tree) NewResult() *Result { return &Result{pin: engine.HostArraysOf(&t.Facade)} }

// Free releases a pinned Result's memory; r is then an ordinary empty
// Result (later calls answer into Go memory). It is a no-op on other
// Results. Earlier answers' views are invalid after it.
func (r *Result) Free() error {
	if r == nil {
		return nil
	}
	err := r.pin.Free()
	*r = Result{}
	if err != nil {
		return fmt.Errorf("btree: freeing a result: %w", err)
	}
	return nil
}

// pinned reports whether r's arrays are in pinned host memory.
func (r *Result) pinned() bool { return r != nil && r.pin != nil }

// pairsCap returns the pairs a pinned Result's keys and values arrays
// hold without growing (0 for other Results). Cost: O(1).
func (r *Result) pairsCap() int {
	if !r.pinned() {
		return 0
	}
	return min(gpu.HostArrayCap[uint64](r.pin, "keys"), gpu.HostArrayCap[uint64](r.pin, "values"))
}

// sizeResult returns into (a new Result when into is nil) sized for q
// queries with total pairs: each array is into's own when it has the
// room, else a new one (pinned for a pinned Result; the two large ones on
// goroutines of their own otherwise). The arrays are not cleared: the
// call that sizes them writes every element. Cost: the allocation (and
// zeroing) of the arrays that grow.
func sizeResult(into *Result, q, total int) (*Result, error) {
	r := into
	if r == nil {
		r = new(Result)
	}
	if r.pin != nil {
		var err error
		if r.Keys, err = gpu.HostArray[uint64](r.pin, "keys", total); err == nil {
			if r.Values, err = gpu.HostArray[uint64](r.pin, "values", total); err == nil {
				r.Offsets, err = gpu.HostArray[int](r.pin, "offsets", q+1)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("pinning the answers: %w", err)
		}
		return r, nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.Keys = slices.Grow(r.Keys[:0], total)[:total] })
	wg.Go(func() { r.Values = slices.Grow(r.Values[:0], total)[:total] })
	r.Offsets = slices.Grow(r.Offsets[:0], q+1)[:q+1]
	wg.Wait()
	return r, nil
}
