package gpu

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/warpkv/warpkv/internal/par"
)

// streamPieceBytes is the bytes one goroutine of UploadStreamed copies at
// a time: small enough that the last pieces of a chunk end close together
// (no goroutine holds a chunk's DMA back by a long piece), large enough
// that taking a piece costs nothing against its copy.
const streamPieceBytes = 128 << 10

// UploadStreamed is UploadRamped without a barrier between chunks: one
// parallel pass on the pipeline's workers copies all of src in pieces of
// streamPieceBytes, taken in order, into the ring's chunks (sizes as
// UploadRamped's), and the goroutine that copies a chunk's last piece
// queues that chunk's DMA on s at once. No worker waits for a chunk's
// slowest piece before starting the next chunk; a piece waits only for its
// ring slot, once the DMA of the chunk that used the slot before has
// ended. DMAs may be queued out of chunk order (each writes its own part
// of dst). Transfers smaller than Direct bytes, a ring that cannot be
// pinned, and a ring with downloads still to unpack take UploadRamped's
// path. src may be reused when it returns; the copies may still be in
// flight. Cost: one parallel pass over src in host memory and the
// transfer, a DMA call and an event record per chunk.
func UploadStreamed[T any](p *Pipeline, s *Stream, dst *Buffer[T], off int, src []T, ramp int) error {
	if len(src) == 0 {
		return nil
	}
	if err := dst.check(off, len(src)); err != nil {
		return err
	}
	if len(src)*sizeOf[T]() < p.cfg.Direct || !p.Staged() || len(p.pending) > 0 {
		return UploadRamped(p, s, dst, off, src, ramp)
	}
	size := sizeOf[T]()
	pl := newStreamPlan(rampChunks(len(src)*size, perChunk[T](p)*size, ramp, size), streamPieceBytes/size*size, len(p.slots), p.next)
	for i := range pl.busyBefore {
		pl.busyBefore[i] = p.slots[i].busy
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), len(src)*size)
	piece := func(i int) error {
		pc := pl.pieces[i]
		c := &pl.chunks[pc.chunk]
		if err := pl.waitSlot(p, int(pc.chunk)); err != nil {
			return err
		}
		pin := p.slots[c.slot].buf.Slice()
		copy(pin[pc.lo-c.at:pc.hi-c.at], raw[pc.lo:pc.hi])
		if c.left.Add(-1) != 0 {
			return nil
		}
		if err := dst.Write(s, off+c.at/size, viewHost[T](pin, c.bytes/size)); err != nil {
			return err
		}
		if err := p.slots[c.slot].ev.Record(s); err != nil {
			return err
		}
		c.issued.Store(true)
		return nil
	}
	par.Shared().For(len(pl.pieces), 1, p.cfg.Workers, func(lo, hi int) {
		for i := lo; i < hi && !pl.failed.Load(); i++ {
			if err := piece(i); err != nil {
				pl.fail(err)
			}
		}
	})
	for i := range min(len(pl.chunks), len(p.slots)) {
		p.slots[(p.next+i)%len(p.slots)].busy = true
	}
	p.next = (p.next + len(pl.chunks)) % len(p.slots)
	if pl.err != nil {
		// A chunk's slot may still be read by a DMA queued before the
		// failure: wait for them before the ring is used again.
		return errors.Join(pl.err, s.Synchronize())
	}
	return nil
}

// streamPlan is UploadStreamed's schedule: the chunks (each in ring slot
// (next+k) mod slots) and their pieces in order.
type streamPlan struct {
	chunks     []streamChunk
	pieces     []streamPiece
	busyBefore []bool // a slot's copy queued before the pass may still run
	slots      int
	failed     atomic.Bool
	once       sync.Once
	err        error
}

// streamChunk is one chunk of an UploadStreamed pass: bytes [at,
// at+bytes) of the source in ring slot slot.
type streamChunk struct {
	at, bytes, slot int
	left            atomic.Int32 // pieces not yet copied
	issued          atomic.Bool  // its DMA and its slot's event are queued
	ready           atomic.Bool  // its slot is free (waitSlot has seen it)
}

// streamPiece is bytes [lo, hi) of the source, in chunk chunk.
type streamPiece struct {
	chunk  int32
	lo, hi int
}

// newStreamPlan cuts chunks of the given byte sizes into pieces of at most
// piece bytes (the last of a chunk shorter), the chunks taking ring slots
// (next+k) mod slots. Cost: O(chunks + pieces).
func newStreamPlan(sizes []int, piece, slots, next int) *streamPlan {
	piece = max(piece, 1)
	pl := &streamPlan{chunks: make([]streamChunk, len(sizes)), busyBefore: make([]bool, slots), slots: slots}
	at := 0
	for k, b := range sizes {
		c := &pl.chunks[k]
		c.at, c.bytes, c.slot = at, b, (next+k)%slots
		n := 0
		for lo := at; lo < at+b; lo += piece {
			pl.pieces = append(pl.pieces, streamPiece{chunk: int32(k), lo: lo, hi: min(lo+piece, at+b)})
			n++
		}
		c.left.Store(int32(n))
		at += b
	}
	return pl
}

// waitSlot returns once chunk k's ring slot may be written: the chunk
// that used the slot before in this pass has queued its DMA and that DMA
// has ended (or, for the first chunks, the copy queued on the slot before
// the pass has ended). Pieces are taken in order, so the chunk before is
// being copied by goroutines that do not wait on k. Cost: nothing once
// the slot was seen free; else a spin until the DMA is queued and an
// event synchronization.
func (pl *streamPlan) waitSlot(p *Pipeline, k int) error {
	c := &pl.chunks[k]
	if c.ready.Load() {
		return nil
	}
	if k >= pl.slots {
		prev := &pl.chunks[k-pl.slots]
		for !prev.issued.Load() {
			if pl.failed.Load() {
				return errStreamFailed
			}
			runtime.Gosched()
		}
	} else if !pl.busyBefore[c.slot] {
		c.ready.Store(true)
		return nil
	}
	if err := p.slots[c.slot].ev.Synchronize(); err != nil {
		return err
	}
	c.ready.Store(true)
	return nil
}

// errStreamFailed stops a piece whose slot's earlier chunk failed; the
// pass returns that chunk's error instead (fail keeps the first).
var errStreamFailed = errors.New("gpu: streamed upload: an earlier chunk failed")

// fail records the pass's first error and stops the remaining pieces.
// errStreamFailed comes only after a first error, so it is never kept.
func (pl *streamPlan) fail(err error) {
	pl.once.Do(func() {
		pl.err = err
		pl.failed.Store(true)
	})
}
