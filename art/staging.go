package art

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Staging is a caller's batch buffer for LookupStaged: the keys are
// written into its Data and Offs (in pinned host memory on the GPU engine,
// so that they reach the device in one DMA without a host copy) and the
// answers come back into its Values and Found. Make one with
// Tree.NewStaging, reuse it across batches, and Free it before closing
// the tree's device.
type Staging struct {
	Data   []byte   // key bytes: key i is Data[Offs[i]:Offs[i+1]]
	Offs   []uint32 // Offs[0] = 0; room for MaxKeys+1 offsets
	Values []uint64 // answers of the last LookupStaged
	Found  []uint8  // 1 where found

	pinned bool
	data   *gpu.HostBuffer[byte]
	offs   *gpu.HostBuffer[uint32]
	vals   *gpu.HostBuffer[uint64]
	found  *gpu.HostBuffer[uint8]
}

// NewStaging returns a staging buffer for batches of up to maxKeys keys
// and maxBytes key bytes: pinned on the GPU engine, ordinary slices on the
// CPU engine. Cost: on the GPU engine four cuMemHostAlloc (milliseconds).
func (t *Tree) NewStaging(maxKeys, maxBytes int) (*Staging, error) {
	if maxKeys < 0 || maxBytes < 0 {
		return nil, fmt.Errorf("art: staging of %d keys, %d bytes", maxKeys, maxBytes)
	}
	p := engine.PlacementOf(&t.Facade)
	if p.Backend != gpu.BackendGPU {
		return &Staging{Data: make([]byte, maxBytes), Offs: make([]uint32, maxKeys+1),
			Values: make([]uint64, maxKeys), Found: make([]uint8, maxKeys)}, nil
	}
	d := p.Device
	st := &Staging{pinned: true}
	var err error
	if st.data, err = gpu.AllocHost[byte](d, max(1, maxBytes)); err == nil {
		if st.offs, err = gpu.AllocHost[uint32](d, maxKeys+1); err == nil {
			if st.vals, err = gpu.AllocHost[uint64](d, max(1, maxKeys)); err == nil {
				st.found, err = gpu.AllocHost[uint8](d, max(1, maxKeys))
			}
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("art: staging: %w", err), st.Free())
	}
	st.Data, st.Offs = st.data.Slice()[:maxBytes], st.offs.Slice()
	st.Values, st.Found = st.vals.Slice()[:maxKeys], st.found.Slice()[:maxKeys]
	return st, nil
}

// Free releases the pinned memory (a no-op on the CPU engine's staging).
func (st *Staging) Free() error {
	if !st.pinned {
		return nil
	}
	err := errors.Join(st.data.Free(), st.offs.Free(), st.vals.Free(), st.found.Free())
	st.Data, st.Offs, st.Values, st.Found = nil, nil, nil, nil
	return err
}

// keys returns the first n staged keys after the checks that cost O(1):
// the count fits, Offs[0] is 0 and the last offset lies in Data. The
// caller runs kb.check (the GPU engine while the keys are on the way).
func (st *Staging) keys(n int) (Keys, error) {
	if n < 0 || n+1 > len(st.Offs) || n > len(st.Values) {
		return Keys{}, fmt.Errorf("art: %d keys staged in a staging of %d", n, len(st.Values))
	}
	if st.Offs[0] != 0 {
		return Keys{}, fmt.Errorf("art: staging: Offs[0] is %d, want 0", st.Offs[0])
	}
	if int(st.Offs[n]) > len(st.Data) {
		return Keys{}, fmt.Errorf("art: staged keys end at byte %d of %d", st.Offs[n], len(st.Data))
	}
	return Keys{Data: st.Data[:st.Offs[n]], Offs: st.Offs[:n+1]}, nil
}

// LookupStaged looks up the first n keys staged in st and leaves the
// answers in st.Values[:n] and st.Found[:n]. st.Offs[0] must be 0. On the
// GPU engine the keys go to the device and the answers come back by DMA
// from and to the pinned buffers, in pipelined chunks, without host
// copies; the batch's check runs on all cores while the keys are on the
// way. Cost: as Lookup, less the host copies.
func (t *Tree) LookupStaged(st *Staging, n int) error {
	kb, err := st.keys(n)
	if err != nil {
		return err
	}
	check := func() error { return kb.check("lookup", nil, false) }
	if _, err := engine.RLock(&t.Facade, "lookup"); err != nil {
		return err
	}
	defer engine.RUnlock(&t.Facade)
	if g, ok := t.eng.(*gpuEngine); ok {
		if err := g.lookupInto(kb, st.Values[:n], st.Found[:n], check); err != nil {
			return fmt.Errorf("art: lookup: %w", err)
		}
		return nil
	}
	if err := check(); err != nil {
		return err
	}
	vals, found := st.Values[:n], make([]bool, n)
	if err := t.eng.lookup(kb, vals, found); err != nil {
		return fmt.Errorf("art: lookup: %w", err)
	}
	for i, f := range found {
		st.Found[i] = 0
		if f {
			st.Found[i] = 1
		}
	}
	return nil
}
