package btree

import (
	"errors"

	"warpkv/gpu"
)

// Pinned staging of uploads: a batch is copied, in chunks, from Go memory
// into one of two pinned host buffers (by parallel goroutines) and from
// there to the device asynchronously, so that the copy of one chunk into
// pinned memory overlaps the DMA of the previous one. Pageable copies make
// the driver stage through its own small buffers, well below the link's
// speed.
const (
	stageChunk   = 1 << 21 // uint64 elements per pinned buffer (16 MiB)
	stageMin     = 1 << 16 // smaller uploads go straight from Go memory
	stageWorkers = 8       // goroutines copying a chunk into pinned memory
	stageGrain   = 1 << 16 // elements a goroutine copies at a time
)

// stager holds the two pinned buffers and the events that say when the
// DMA out of each has finished.
type stager struct {
	h    [2]*gpu.HostBuffer[uint64]
	ev   [2]*gpu.Event
	busy [2]bool
}

// upload copies src to dst[off:] on g's stream: through the pinned
// staging buffers when src is large (allocated on first use; when pinning
// fails it falls back to a direct copy), else directly. The copy may still
// be in flight when it returns; src may be reused at once. Callers hold
// g.mu. Cost: one pass over src in host memory and the transfer.
func (g *gpuTree) upload(dst *gpu.Buffer[uint64], off int, src []uint64) error {
	if len(src) < stageMin || !g.stagingReady() {
		return dst.Write(g.s, off, src)
	}
	st := g.stage
	for i, c := 0, 0; i < len(src); i, c = i+stageChunk, c+1 {
		b := c % 2
		if st.busy[b] {
			if err := st.ev[b].Synchronize(); err != nil {
				return err
			}
		}
		chunk := src[i:min(i+stageChunk, len(src))]
		pin := st.h[b].Slice()[:len(chunk)]
		parallelFor(stageWorkers, len(chunk), stageGrain, func(lo, hi int) { copy(pin[lo:hi], chunk[lo:hi]) })
		if err := dst.Write(g.s, off+i, pin); err != nil {
			return err
		}
		if err := st.ev[b].Record(g.s); err != nil {
			return err
		}
		st.busy[b] = true
	}
	return nil
}

// stagingReady allocates the staging buffers on first use and reports
// whether they exist.
func (g *gpuTree) stagingReady() bool {
	if g.stage != nil {
		return true
	}
	if g.stageFailed {
		return false
	}
	st := &stager{}
	var err error
	for b := range st.h {
		if st.h[b], err = gpu.AllocHost[uint64](g.dev, stageChunk); err != nil {
			break
		}
		if st.ev[b], err = g.dev.NewEvent(); err != nil {
			break
		}
	}
	if err != nil {
		_ = st.close() // best effort; the direct copy still works
		g.stageFailed = true
		return false
	}
	g.stage = st
	return true
}

// close frees the staging buffers; the stream must be idle.
func (st *stager) close() error {
	if st == nil {
		return nil
	}
	var err error
	for b := range st.h {
		if st.h[b] != nil {
			err = errors.Join(err, st.h[b].Free())
		}
		if st.ev[b] != nil {
			err = errors.Join(err, st.ev[b].Close())
		}
	}
	return err
}
