package btree

import (
	"errors"
	"fmt"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Staging is a caller's batch buffer for LookupStaged (and InsertStaged,
// which reads the pairs from Keys and Values): the keys are
// written into its Keys (in pinned host memory on the GPU engine, so that
// they reach the device by DMA without a host copy) and the answers come
// back into its Values and Found (1 where found). Make one with
// Tree.NewStaging, reuse it across batches, and Free it before closing
// the tree's device. It is art.Staging's counterpart for 64-bit keys.
type Staging struct {
	Keys   []uint64 // the batch: room for MaxKeys keys
	Values []uint64 // answers of the last LookupStaged
	Found  []uint8  // 1 where found, else 0

	pinned bool
	keys   *gpu.HostBuffer[uint64]
	vals   *gpu.HostBuffer[uint64]
	found  *gpu.HostBuffer[uint8]
}

// NewStaging returns a staging buffer for batches of up to maxKeys keys:
// pinned on the GPU engine, ordinary slices on the CPU engine. Cost: on
// the GPU engine three cuMemHostAlloc (milliseconds).
func (t *Tree) NewStaging(maxKeys int) (*Staging, error) {
	if maxKeys < 0 {
		return nil, fmt.Errorf("btree: staging of %d keys", maxKeys)
	}
	p := engine.PlacementOf(&t.Facade)
	if p.Backend != gpu.BackendGPU || p.Device == nil {
		return &Staging{Keys: make([]uint64, maxKeys), Values: make([]uint64, maxKeys), Found: make([]uint8, maxKeys)}, nil
	}
	d := p.Device
	st := &Staging{pinned: true}
	var err error
	if st.keys, err = gpu.AllocHost[uint64](d, max(1, maxKeys)); err == nil {
		if st.vals, err = gpu.AllocHost[uint64](d, max(1, maxKeys)); err == nil {
			st.found, err = gpu.AllocHost[uint8](d, max(1, maxKeys))
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("btree: staging: %w", err), st.Free())
	}
	st.Keys, st.Values, st.Found = st.keys.Slice()[:maxKeys], st.vals.Slice()[:maxKeys], st.found.Slice()[:maxKeys]
	return st, nil
}

// Free releases the pinned memory (a no-op on the CPU engine's staging);
// the Staging is empty after it.
func (st *Staging) Free() error {
	if st == nil || !st.pinned {
		return nil
	}
	err := errors.Join(st.keys.Free(), st.vals.Free(), st.found.Free())
	*st = Staging{}
	if err != nil {
		return fmt.Errorf("btree: freeing a staging: %w", err)
	}
	return nil
}

// LookupStaged looks up the first n keys of st.Keys and leaves the
// answers in st.Values[:n] and st.Found[:n]. On the GPU engine the keys
// go to the device and the answers come back by DMA from and into the
// pinned arrays, in chunks pipelined over two streams, with no host
// copy. Cost: as Lookup, less the host copies.
func (t *Tree) LookupStaged(st *Staging, n int) error {
	if st == nil || n < 0 || n > len(st.Keys) {
		return fmt.Errorf("btree: lookup: %d keys staged in a staging of %d", n, stagedLen(st))
	}
	t0 := time.Now()
	if _, err := engine.RLock(&t.Facade, "lookup"); err != nil {
		return err
	}
	defer engine.RUnlock(&t.Facade)
	keys, vals, found := st.Keys[:n], st.Values[:n], st.Found[:n]
	if t.e.state().root == nilNode || n == 0 {
		clear(vals)
		clear(found)
		t.idle("lookup", n, t0)
		return nil
	}
	var tm engine.Timings
	var err error
	if g, ok := t.e.(*gpuTree); ok && st.pinned {
		tm, err = g.lookupStaged(keys, vals, found)
	} else {
		f := make([]bool, n)
		if tm, err = t.e.lookup(keys, vals, f); err == nil {
			for i, x := range f {
				found[i] = 0
				if x {
					found[i] = 1
				}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("btree: lookup: %w", err)
	}
	engine.Record(&t.Facade, tm)
	return nil
}

// stagedLen is st's capacity in keys (0 for nil).
func stagedLen(st *Staging) int {
	if st == nil {
		return 0
	}
	return len(st.Keys)
}
