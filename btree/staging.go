package btree

import (
	"errors"
	"unsafe"

	"warpkv/internal/par"

	"warpkv/gpu"
)

// Pinned staging of transfers. An upload is copied, in chunks, from Go
// memory into pinned host buffers (by parallel goroutines) and from there
// to the device asynchronously, so that the copy of one chunk into pinned
// memory overlaps the DMA of the chunks before it. A download goes the
// other way: each chunk is copied from the device into a pinned buffer
// asynchronously and from there into Go memory (in parallel) once its
// event has passed, while later chunks are still in flight. Pageable
// copies make the driver stage through its own small buffers, well below
// the link's speed.
const (
	stageChunk   = 1 << 21 // uint64 elements per pinned buffer (16 MiB; 4 MiB chunks measured slower: per-chunk host overhead)
	stageBufs    = 4       // pinned buffers each way: chunks in flight
	stageMin     = 1 << 16 // smaller transfers (in 8-byte words) go straight from or to Go memory
	stageWorkers = 8       // goroutines copying a chunk to or from pinned memory
	stageGrain   = 1 << 16 // elements a goroutine copies at a time
)

// stager holds the pinned buffers of both directions and the events that
// say when the DMA of each has finished. Uploads and downloads take their
// buffers round robin; pending lists the downloads not yet copied out, in
// the order of their buffers.
type stager struct {
	up, down     [stageBufs]*gpu.HostBuffer[uint64]
	upEv, downEv [stageBufs]*gpu.Event
	upBusy       [stageBufs]bool
	nextUp       int
	nextDown     int
	pending      []pendingDown
}

// pendingDown is a download chunk in a pinned buffer waiting for its event:
// copyOut moves it from the pinned words to its Go destination.
type pendingDown struct {
	buf     int
	copyOut func(pin []uint64)
}

// upload copies src to dst[off:] on g's stream s. See uploadOn.
func (g *gpuTree) upload(dst *gpu.Buffer[uint64], off int, src []uint64) error {
	return g.uploadOn(g.s, dst, off, src)
}

// uploadOn copies src to dst[off:] on stream s: through the pinned staging
// buffers when src is large (allocated on first use; when pinning fails it
// falls back to a direct copy), else directly. The copy may still be in
// flight when it returns; src may be reused at once. Callers hold g.mu.
// Cost: one pass over src in host memory and the transfer.
func (g *gpuTree) uploadOn(s *gpu.Stream, dst *gpu.Buffer[uint64], off int, src []uint64) error {
	if len(src) < stageMin || !g.stagingReady() {
		return dst.Write(s, off, src)
	}
	st := g.stage
	for i := 0; i < len(src); i += stageChunk {
		b := st.nextUp
		st.nextUp = (b + 1) % stageBufs
		if st.upBusy[b] {
			if err := st.upEv[b].Synchronize(); err != nil {
				return err
			}
		}
		chunk := src[i:min(i+stageChunk, len(src))]
		pin := st.up[b].Slice()[:len(chunk)]
		par.For(len(chunk), stageGrain, stageWorkers, func(lo, hi int) { copy(pin[lo:hi], chunk[lo:hi]) })
		if err := dst.Write(s, off+i, pin); err != nil {
			return err
		}
		if err := st.upEv[b].Record(s); err != nil {
			return err
		}
		st.upBusy[b] = true
	}
	return nil
}

// readStaged queues the copy of src[off:off+len(dst)] into dst on stream
// s: through the pinned staging buffers when dst is large, else directly
// (pageable; complete once s is synchronized). A staged copy is complete
// only after g.drainDownloads, which copies the chunks out of pinned
// memory as their events pass; queuing more chunks than there are buffers
// copies the oldest out first, so the copies out of pinned memory overlap
// the later DMAs. Callers hold g.mu. Cost: the transfer and one pass over
// dst in host memory.
func readStaged[T any](g *gpuTree, s *gpu.Stream, src *gpu.Buffer[T], off int, dst []T) error {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(dst) == 0 {
		return nil
	}
	if len(dst)*size < 8*stageMin || 8%size != 0 || !g.stagingReady() {
		return src.Read(s, off, dst)
	}
	st := g.stage
	per := stageChunk * 8 / size // elements of T per pinned buffer
	for i := 0; i < len(dst); i += per {
		b := st.nextDown
		for len(st.pending) > 0 && st.pending[0].buf == b || len(st.pending) == stageBufs {
			if err := g.drainOne(); err != nil {
				return err
			}
		}
		st.nextDown = (b + 1) % stageBufs
		out := dst[i:min(i+per, len(dst))]
		words := st.down[b].Slice()
		pin := unsafe.Slice((*T)(unsafe.Pointer(&words[0])), len(out))
		if err := src.Read(s, off+i, pin); err != nil {
			return err
		}
		if err := st.downEv[b].Record(s); err != nil {
			return err
		}
		st.pending = append(st.pending, pendingDown{buf: b, copyOut: func(w []uint64) {
			p := unsafe.Slice((*T)(unsafe.Pointer(&w[0])), len(out))
			par.For(len(out), stageGrain, stageWorkers, func(lo, hi int) { copy(out[lo:hi], p[lo:hi]) })
		}})
	}
	return nil
}

// drainOne waits for the oldest pending download chunk and copies it out
// of pinned memory.
func (g *gpuTree) drainOne() error {
	st := g.stage
	p := st.pending[0]
	st.pending = st.pending[1:]
	if err := st.downEv[p.buf].Synchronize(); err != nil {
		return err
	}
	p.copyOut(st.down[p.buf].Slice())
	return nil
}

// drainDownloads completes every pending staged download. Callers hold
// g.mu.
func (g *gpuTree) drainDownloads() error {
	for g.stage != nil && len(g.stage.pending) > 0 {
		if err := g.drainOne(); err != nil {
			g.stage.pending = nil
			return err
		}
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
	for b := range stageBufs {
		if st.up[b], err = gpu.AllocHost[uint64](g.dev, stageChunk); err != nil {
			break
		}
		if st.down[b], err = gpu.AllocHost[uint64](g.dev, stageChunk); err != nil {
			break
		}
		if st.upEv[b], err = g.dev.NewEvent(); err != nil {
			break
		}
		if st.downEv[b], err = g.dev.NewEvent(); err != nil {
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

// close frees the staging buffers; the streams must be idle.
func (st *stager) close() error {
	if st == nil {
		return nil
	}
	var err error
	for b := range stageBufs {
		for _, h := range []*gpu.HostBuffer[uint64]{st.up[b], st.down[b]} {
			if h != nil {
				err = errors.Join(err, h.Free())
			}
		}
		for _, e := range []*gpu.Event{st.upEv[b], st.downEv[b]} {
			if e != nil {
				err = errors.Join(err, e.Close())
			}
		}
	}
	return err
}
