package gpu

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/warpkv/warpkv/internal/ntcopy"
	"github.com/warpkv/warpkv/internal/par"
)

// Pipeline is warpkv's one pinned transfer pipeline. It moves data between
// Go memory and device memory through a ring of pinned host chunks, each
// with an event that says when the copy queued on it has finished: an
// upload packs chunk k into pinned memory on all cores while the DMA of
// chunk k-1 runs; a download queues the DMA of chunk k+1 before it unpacks
// chunk k on all cores. Copies between pageable Go memory and the device
// would make the driver stage them through its own small buffers, well
// below the link's speed.
//
// Run schedules a batch cut into chunks over three streams (transfers in,
// kernels, transfers out), so that one chunk's transfers overlap its
// neighbours' kernels.
//
// The ring is pinned on first use (or by Alloc); when pinning fails the
// transfers go straight from or to Go memory. A Pipeline is not safe for
// concurrent use: an engine serializes its batches.
type Pipeline struct {
	d       *Device
	cfg     PipelineConfig
	slots   []slot
	next    int          // the slot the next chunk takes
	pending []pendingOut // downloads in pinned memory, oldest first, waiting to be unpacked
	pinErr  error        // pinning the ring failed: transfers go direct
	events  []*Event     // Run's, runEvents per chunk
}

// PipelineConfig sizes a Pipeline. Zero fields take the defaults.
type PipelineConfig struct {
	ChunkBytes int // bytes of one pinned chunk (default 16 MiB)
	Chunks     int // chunks in the ring: transfers in flight (default 2)
	Direct     int // transfers of fewer bytes skip the ring (default 0: none do)
	Workers    int // goroutines packing or unpacking one chunk (default GOMAXPROCS)
	Grain      int // elements one goroutine copies at a time (default: a chunk's share of each worker, at least 64 KiB)
}

// Pipeline defaults.
const (
	DefaultChunkBytes = 16 << 20
	DefaultChunks     = 2
)

// slot is one pinned chunk of the ring.
type slot struct {
	buf  *HostBuffer[byte]
	ev   marker // recorded after the last copy queued from or into buf
	busy bool   // that copy may still run
}

// marker is what a slot needs of its event (an *Event; tests of the ring's
// order use a host stand-in).
type marker interface {
	Record(s *Stream) error
	Synchronize() error
	Close() error
}

// pendingOut is a download chunk in slot's pinned memory; unpack copies it
// to its Go destination.
type pendingOut struct {
	slot   int
	unpack func(pin []byte)
}

// NewPipeline returns a pipeline on d; nothing is pinned until the first
// staged transfer or Alloc. Cost: O(1).
func NewPipeline(d *Device, c PipelineConfig) *Pipeline {
	if c.ChunkBytes <= 0 {
		c.ChunkBytes = DefaultChunkBytes
	}
	if c.Chunks <= 0 {
		c.Chunks = DefaultChunks
	}
	c.Workers = par.Workers(c.Workers)
	return &Pipeline{d: d, cfg: c}
}

// Config returns the pipeline's configuration, defaults applied.
func (p *Pipeline) Config() PipelineConfig { return p.cfg }

// Alloc pins the ring now and returns the error if it cannot; later
// transfers then go direct. Cost: Chunks cuMemHostAlloc of ChunkBytes
// (milliseconds each), once.
func (p *Pipeline) Alloc() error {
	if p.slots != nil || p.pinErr != nil {
		return p.pinErr
	}
	slots := make([]slot, p.cfg.Chunks)
	var err error
	for i := range slots {
		if slots[i].buf, err = AllocHost[byte](p.d, p.cfg.ChunkBytes); err != nil {
			break
		}
		var ev *Event
		if ev, err = p.d.NewEvent(); err != nil {
			break
		}
		slots[i].ev = ev
	}
	if err != nil {
		p.pinErr = fmt.Errorf("gpu: pipeline: pinning %d chunks of %d bytes: %w", p.cfg.Chunks, p.cfg.ChunkBytes, err)
		_ = closeSlots(slots) // best effort: pinErr says what failed
		return p.pinErr
	}
	p.slots = slots
	return nil
}

// Staged reports whether transfers of at least Direct bytes go through
// the pinned ring, pinning it on first use. Cost: Alloc's, once.
func (p *Pipeline) Staged() bool { return p.Alloc() == nil }

// take returns the next slot of the ring once the copy last queued on it
// has finished, unpacking pending downloads up to it first.
func (p *Pipeline) take() (int, []byte, error) {
	i := p.next
	p.next = (i + 1) % len(p.slots)
	for p.isPending(i) {
		if err := p.unpackOldest(); err != nil {
			return 0, nil, err
		}
	}
	s := &p.slots[i]
	if s.busy {
		if err := s.ev.Synchronize(); err != nil {
			return 0, nil, err
		}
		s.busy = false
	}
	return i, s.buf.Slice(), nil
}

// queued marks slot i as used by the copy just queued on s.
func (p *Pipeline) queued(i int, s *Stream) error {
	p.slots[i].busy = true
	return p.slots[i].ev.Record(s)
}

func (p *Pipeline) isPending(i int) bool {
	for _, q := range p.pending {
		if q.slot == i {
			return true
		}
	}
	return false
}

// unpackOldest waits for the oldest pending download and unpacks it.
func (p *Pipeline) unpackOldest() error {
	q := p.pending[0]
	p.pending = p.pending[1:]
	s := &p.slots[q.slot]
	if err := s.ev.Synchronize(); err != nil {
		return err
	}
	s.busy = false
	q.unpack(s.buf.Slice())
	return nil
}

// copyPar copies src to dst (equal lengths) on the pipeline's workers of
// par.Shared, whose fan-out costs microseconds where new goroutines cost
// tens of them per chunk, in pieces of grain elements (0: p.grain's),
// each piece with cp.
func copyPar[T any](p *Pipeline, dst, src []T, grain int, cp func(dst, src []T) int) {
	if grain <= 0 {
		grain = p.grain(len(src), sizeOf[T]())
	}
	par.Shared().For(len(src), grain, p.cfg.Workers, func(lo, hi int) { cp(dst[lo:hi], src[lo:hi]) })
}

// copyIn copies Go memory into a pinned chunk (copyPar) with
// non-temporal stores (ntcopy): the chunk is read next by the DMA, not by
// the host, so its lines need not be read into the cache first. On the
// H200 host that made the B+ tree's lookups from Go slices 9-12% faster
// and CuART's point calls from packed batches 5-12% (BENCHMARKS.md,
// "Staging copies with non-temporal stores").
func copyIn[T any](p *Pipeline, dst, src []T, grain int) {
	copyPar(p, dst, src, grain, ntcopy.Slice[T])
}

// copyOut copies a pinned chunk into Go memory (copyPar) with ordinary
// stores: non-temporal ones measured no faster there, and the caller
// reads its answers next.
func copyOut[T any](p *Pipeline, dst, src []T) { copyPar(p, dst, src, 0, builtinCopy[T]) }

// builtinCopy is the built-in copy as a function value.
func builtinCopy[T any](dst, src []T) int { return copy(dst, src) }

// minGrainBytes is the fewest bytes one goroutine of a default-grained
// copy takes: smaller copies run inline, where a fan-out would cost more
// than it shares (and would keep the pool's workers spinning after every
// small transfer).
const minGrainBytes = 64 << 10

// maxGrainBytes is the most bytes one goroutine of a default-grained copy
// takes at a time. Smaller pieces end a chunk's copy closer together (its
// DMA waits for the last); from 1 MiB Go's memmove on amd64 (copyOut)
// switches to non-temporal stores with non-temporal prefetches, which
// copied slower on all cores (branch hcopy measured the B+ tree's rings
// at 28.1 GB/s with 1 MiB copies against 37.7 GB/s with 512 KiB ones on
// the H200 host's 16 threads). A 16 MiB chunk on 16 workers would
// otherwise be copied in exactly 1 MiB pieces.
const maxGrainBytes = 512 << 10

// grain returns the elements of size bytes one goroutine copies at a time
// of a copy of n: the configured Grain, or n's share of each worker but
// at least minGrainBytes and at most maxGrainBytes.
func (p *Pipeline) grain(n, size int) int {
	if p.cfg.Grain > 0 {
		return p.cfg.Grain
	}
	return min(max(n/p.cfg.Workers, (minGrainBytes+size-1)/size), max(1, maxGrainBytes/size))
}

// viewHost returns the first n elements of T of the bytes b.
func viewHost[T any](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	if n*sizeOf[T]() > len(b) {
		panic(fmt.Sprintf("gpu: %d elements of %d bytes in %d bytes", n, sizeOf[T](), len(b)))
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// perChunk returns the elements of T one chunk holds.
func perChunk[T any](p *Pipeline) int { return max(1, p.cfg.ChunkBytes/sizeOf[T]()) }

// UploadStaged queues the copy of src to dst[off:] on s through the pinned
// ring (directly when src is smaller than Direct bytes or the ring could
// not be pinned). src may be reused when it returns; the copies may still
// be in flight. Cost: one parallel pass over src in host memory and the
// transfer; it waits only for ring chunks to come free.
func UploadStaged[T any](p *Pipeline, s *Stream, dst *Buffer[T], off int, src []T) error {
	return UploadStagedGrain(p, s, dst, off, src, 0)
}

// UploadStagedGrain is UploadStaged with the host copy of each chunk cut
// into pieces of grain elements that the workers take one at a time (0:
// the pipeline's Grain). Smaller pieces end a chunk's copy closer to its
// share of the workers' time (the DMA waits for the chunk's last piece);
// pieces of 1 MiB or more make Go's memmove use non-temporal stores. Cost:
// UploadStaged's.
func UploadStagedGrain[T any](p *Pipeline, s *Stream, dst *Buffer[T], off int, src []T, grain int) error {
	if len(src) == 0 {
		return nil
	}
	if err := dst.check(off, len(src)); err != nil {
		return err
	}
	if len(src)*sizeOf[T]() < p.cfg.Direct || !p.Staged() {
		return dst.Write(s, off, src)
	}
	per := perChunk[T](p)
	for i := 0; i < len(src); i += per {
		k, pin, err := p.take()
		if err != nil {
			return err
		}
		chunk := src[i:min(i+per, len(src))]
		pt := viewHost[T](pin, len(chunk))
		copyIn(p, pt, chunk, grain)
		if err := dst.Write(s, off+i, pt); err != nil {
			return err
		}
		if err := p.queued(k, s); err != nil {
			return err
		}
	}
	return nil
}

// UploadFunc queues the copy of a byte stream of total bytes to dst[off:]
// on s: fill(b, pos) writes stream bytes [pos, pos+len(b)) into b, on
// several goroutines for disjoint ranges (Grain bytes or more each). It
// returns once every chunk is packed; the copies may still be in flight.
// Without a pinned ring it packs into Go memory and copies synchronously.
// Cost: the fills, and the transfer.
func (p *Pipeline) UploadFunc(s *Stream, dst *Buffer[byte], off, total int, fill func(b []byte, pos int)) error {
	if total <= 0 {
		return nil
	}
	if err := dst.check(off, total); err != nil {
		return err
	}
	pack := func(b []byte, pos int) {
		par.Shared().For(len(b), p.grain(len(b), 1), p.cfg.Workers, func(lo, hi int) { fill(b[lo:hi], pos+lo) })
	}
	if !p.Staged() {
		tmp := make([]byte, min(p.cfg.ChunkBytes, total))
		for pos := 0; pos < total; pos += len(tmp) {
			b := tmp[:min(len(tmp), total-pos)]
			pack(b, pos)
			if err := errors.Join(dst.Write(s, off+pos, b), s.Synchronize()); err != nil {
				return err
			}
		}
		return nil
	}
	for pos := 0; pos < total; pos += p.cfg.ChunkBytes {
		k, pin, err := p.take()
		if err != nil {
			return err
		}
		b := pin[:min(p.cfg.ChunkBytes, total-pos)]
		pack(b, pos)
		if err := dst.Write(s, off+pos, b); err != nil {
			return err
		}
		if err := p.queued(k, s); err != nil {
			return err
		}
	}
	return nil
}

// DownloadStaged queues the copy of src[off:off+len(dst)] into dst on s
// through the pinned ring (directly when dst is smaller than Direct bytes
// or the ring could not be pinned: that copy is complete once s is
// synchronized). A staged copy is complete only after Drain; queuing more
// chunks than the ring holds unpacks the oldest first, so the copies out
// of pinned memory overlap the later DMAs. dst must stay untouched until
// then. Cost: the transfer and one parallel pass over dst in host memory.
func DownloadStaged[T any](p *Pipeline, s *Stream, src *Buffer[T], off int, dst []T) error {
	if len(dst) == 0 {
		return nil
	}
	if err := src.check(off, len(dst)); err != nil {
		return err
	}
	if len(dst)*sizeOf[T]() < p.cfg.Direct || !p.Staged() {
		return src.Read(s, off, dst)
	}
	per := perChunk[T](p)
	for i := 0; i < len(dst); i += per {
		k, pin, err := p.take()
		if err != nil {
			return err
		}
		out := dst[i:min(i+per, len(dst))]
		if err := src.Read(s, off+i, viewHost[T](pin, len(out))); err != nil {
			return err
		}
		if err := p.queued(k, s); err != nil {
			return err
		}
		p.pending = append(p.pending, pendingOut{slot: k, unpack: func(pin []byte) {
			copyOut(p, out, viewHost[T](pin, len(out)))
		}})
	}
	return nil
}

// Drain completes every staged download: it waits for each chunk's copy
// and unpacks it, oldest first. On an error the remaining downloads are
// dropped (their chunks are reused only after their copies finish). Cost:
// the waits and the unpacking.
func (p *Pipeline) Drain() error {
	for len(p.pending) > 0 {
		if err := p.unpackOldest(); err != nil {
			p.Discard()
			return err
		}
	}
	return nil
}

// Discard drops the pending downloads without unpacking them (after a
// failed batch); their chunks are reused only after their copies finish.
// Cost: O(1).
func (p *Pipeline) Discard() { p.pending = nil }

// Close waits for the copies in flight and frees the ring and Run's
// events; the pipeline stays usable (it pins again on next use). Cost: a
// synchronization and a free per chunk.
func (p *Pipeline) Close() error {
	p.pending = nil
	err := closeSlots(p.slots)
	p.slots, p.next = nil, 0
	for _, e := range p.events {
		err = errors.Join(err, e.Close())
	}
	p.events = nil
	return err
}

// closeSlots waits for and frees the slots' copies, buffers and events.
func closeSlots(slots []slot) error {
	var err error
	for _, s := range slots {
		if s.ev != nil {
			if s.busy {
				err = errors.Join(err, s.ev.Synchronize())
			}
			err = errors.Join(err, s.ev.Close())
		}
		err = errors.Join(err, s.buf.Free())
	}
	return err
}
