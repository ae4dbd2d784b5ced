package hashindex

import (
	"errors"
	"fmt"
	"unsafe"

	"warpkv/gpu"
)

// Host-level calls on the GPU engine move their batch through staging
// buffers: a pinned host buffer and a device buffer with the same layout
// (the input arrays, then the output array, then per-chunk counters). A
// batch of up to pipeChunk jobs is one chunk: one copy into the pinned
// buffer, one transfer in, the kernels, one transfer out and one
// synchronization, all on the engine's stream. A larger batch is cut into
// chunks that are applied one after another (so batch order holds across
// chunks) and pipelined over three streams: a chunk's transfer in (copy
// stream), its kernels (the engine's stream) and its transfer out (out
// stream) overlap those of its neighbours, while the host copies the next
// chunks into the pinned buffer and consumes the outputs of earlier ones.

// Staging and pipeline tuning.
const (
	stageAlign = 16 // byte alignment of every array in the staging buffers

	pipeChunk = 1 << 20 // most jobs of one chunk of a host-level call
	pipeLag   = 2       // chunks queued on the device ahead of the one the host consumes

	hostParallelMin = 1 << 15 // the fewest jobs one goroutine copies, checks or decodes
)

func alignUp(n int) int { return (n + stageAlign - 1) &^ (stageAlign - 1) }

// stageLayout places a batch of n jobs in chunks chunks in the staging
// buffers: byte offsets of the hashes, of the locations (when the call has
// them), of the outputs and of one uint32 counter per chunk (when the call
// counts), and the total size. The inputs are [0, out).
type stageLayout struct {
	hashes, locs, out, counts, end int
}

// newStageLayout lays out n hashes, n locations if withLocs, n outputs of
// outBytes each and, if counted, chunks counters.
func newStageLayout(n int, withLocs bool, outBytes, chunks int, counted bool) stageLayout {
	l := stageLayout{locs: alignUp(8 * n)}
	l.out = l.locs
	if withLocs {
		l.out += alignUp(4 * n)
	}
	l.counts = l.out + alignUp(outBytes*n)
	l.end = l.counts
	if counted {
		l.end += alignUp(4 * chunks)
	}
	return l
}

// chunk is a range of jobs of a host-level call on the GPU engine, with
// the device views of its inputs and the byte offsets of its outputs and
// counter in the staging buffers.
type chunk struct {
	first, n int
	hashes   *gpu.Buffer[uint64]
	locs     *gpu.Buffer[uint32] // nil for searches
	out      int                 // byte offset of output first
	count    int                 // byte offset of the chunk's counter, -1 if the call does not count
}

// devCount returns the device address of the chunk's counter, 0 if the
// call does not count.
func devCount(e *gpuEngine, c chunk) gpu.DevicePtr {
	if c.count < 0 {
		return 0
	}
	return e.devStage.PtrAt(c.count)
}

// hostCount returns the chunk's counter, valid once the chunk is consumed.
func hostCount(e *gpuEngine, c chunk) uint32 { return hostView[uint32](e, c.count, 1)[0] }

// devOut returns the device view of the chunk's output.
func devOut[T uint32 | uint64](e *gpuEngine, c chunk) *gpu.Buffer[T] {
	return gpu.View[T](e.devStage, c.out, c.n)
}

// hostOut returns the chunk's output in the pinned buffer, valid once the
// chunk is consumed.
func hostOut[T uint32 | uint64](e *gpuEngine, c chunk) []T {
	return hostView[T](e, c.out, c.n)
}

// hostView returns n elements of T at byte offset off of the pinned
// staging buffer (off is 16-byte aligned, the buffer page-aligned).
func hostView[T uint32 | uint64](e *gpuEngine, off, n int) []T {
	if n == 0 {
		return nil
	}
	b := e.host.Slice()
	_ = b[off+n*int(unsafe.Sizeof(T(0)))-1] // bounds check
	return unsafe.Slice((*T)(unsafe.Pointer(&b[off])), n)
}

// stage makes both staging buffers hold at least bytes, reallocating with
// headroom when they are smaller. The previous host-level call has
// synchronized and no device-level call uses them, so they are idle.
func (e *gpuEngine) stage(bytes int) error {
	if e.host == nil || e.host.Len() < bytes {
		if err := e.host.Free(); err != nil {
			return fmt.Errorf("freeing pinned staging: %w", err)
		}
		e.host = nil
		size := withHeadroom(bytes)
		h, err := gpu.AllocHost[byte](e.dev, size)
		if err != nil {
			return fmt.Errorf("pinned staging of %d bytes: %w", size, err)
		}
		e.host = h
	}
	b, err := e.stageDev.get(e.dev, e.stream, bytes)
	if err != nil {
		return fmt.Errorf("device staging: %w", err)
	}
	e.devStage = b
	return nil
}

// withHeadroom returns a size a quarter larger than bytes, so that slowly
// growing batches do not reallocate on every call.
func withHeadroom(bytes int) int { return bytes + bytes/4 + 1<<16 }

// devScratch is device memory reused across calls and grown with
// headroom.
type devScratch struct{ buf *gpu.Buffer[byte] }

// get returns the scratch buffer, at least bytes long. Growing it waits
// for s first, since work queued there may still use the old memory.
// Cost: nothing when it is large enough, else a synchronization and an
// allocation.
func (d *devScratch) get(dev *gpu.Device, s *gpu.Stream, bytes int) (*gpu.Buffer[byte], error) {
	if d.buf != nil && d.buf.Len() >= bytes {
		return d.buf, nil
	}
	if d.buf != nil {
		if err := s.Synchronize(); err != nil {
			return nil, err
		}
		if err := d.buf.Free(); err != nil {
			return nil, err
		}
		d.buf = nil
	}
	size := withHeadroom(bytes)
	b, err := gpu.Alloc[byte](dev, size)
	if err != nil {
		return nil, fmt.Errorf("%d bytes: %w", size, err)
	}
	d.buf = b
	return b, nil
}

// free releases the scratch.
func (d *devScratch) free() error {
	err := d.buf.Free()
	d.buf = nil
	return err
}

// Pipeline events of chunk c: its transfer in done, its kernels done, its
// transfer out done.
const (
	evIn = iota
	evComputed
	evOut
	evPerChunk
)

// pipeEvents returns evPerChunk*chunks events, creating more when needed.
func (e *gpuEngine) pipeEvents(chunks int) ([]*gpu.Event, error) {
	for len(e.events) < evPerChunk*chunks {
		ev, err := e.dev.NewEvent()
		if err != nil {
			return nil, err
		}
		e.events = append(e.events, ev)
	}
	return e.events[:evPerChunk*chunks], nil
}

// hostCall runs one host-level call over the jobs (hashes[i], locs[i])
// (locs nil for searches) with outBytes of output per job and, if
// counted, a zeroed uint32 counter per chunk for the kernels to add to: it
// stages the batch chunk by chunk, queues compute for each chunk on the
// engine's stream between the chunk's transfer in and its transfer out,
// and hands every chunk, in order, to done once its output and counter are
// in the pinned buffer. On error it waits for the queued work before
// returning, so the staging buffers are idle again.
func (e *gpuEngine) hostCall(hashes []uint64, locs []uint32, outBytes int, counted bool, compute func(chunk) error, done func(chunk)) (err error) {
	n := len(hashes)
	chunks := (n + e.chunkJobs - 1) / e.chunkJobs
	size := (n + chunks - 1) / chunks // balanced chunks,
	chunks = (n + size - 1) / size    // none of them empty
	l := newStageLayout(n, locs != nil, outBytes, chunks, counted)
	if err := e.stage(l.end); err != nil {
		return err
	}
	piped := chunks > 1
	var events []*gpu.Event
	if piped {
		if events, err = e.pipeEvents(chunks); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.copyStream.Synchronize(), e.stream.Synchronize(), e.outStream.Synchronize())
		}
	}()
	stage := e.devStage
	pinned := e.host.Slice()
	if counted {
		if err := gpu.View[uint32](stage, l.counts, chunks).FillBytes(e.stream, 0); err != nil {
			return err
		}
	}
	at := func(c int) chunk {
		first := c * size
		k := chunk{first: first, n: min(size, n-first), out: l.out + outBytes*first, count: -1}
		k.hashes = gpu.View[uint64](stage, l.hashes+8*first, k.n)
		if locs != nil {
			k.locs = gpu.View[uint32](stage, l.locs+4*first, k.n)
		}
		if counted {
			k.count = l.counts + 4*c
		}
		return k
	}
	// transfer queues a copy of staging bytes [lo, hi) to the device (in)
	// or back to the pinned buffer on s.
	transfer := func(s *gpu.Stream, in bool, lo, hi int) error {
		if in {
			return stage.Write(s, lo, pinned[lo:hi])
		}
		return stage.Read(s, lo, pinned[lo:hi])
	}
	consumed := 0
	consume := func() error {
		if piped {
			if err := events[evPerChunk*consumed+evOut].Synchronize(); err != nil {
				return err
			}
		} else if err := e.stream.Synchronize(); err != nil {
			return err
		}
		done(at(consumed))
		consumed++
		return nil
	}
	for c := range chunks {
		k := at(c)
		e.copyIn(l, hashes, locs, k.first, k.n)
		in, out := e.stream, e.stream
		if piped {
			in, out = e.copyStream, e.outStream
		}
		// Transfer in: one copy when the call is one chunk (the hashes,
		// the padding and the locations), else the chunk's hashes and
		// locations.
		if !piped {
			if err := transfer(in, true, 0, l.out); err != nil {
				return err
			}
		} else {
			if err := transfer(in, true, l.hashes+8*k.first, l.hashes+8*(k.first+k.n)); err != nil {
				return err
			}
			if locs != nil {
				if err := transfer(in, true, l.locs+4*k.first, l.locs+4*(k.first+k.n)); err != nil {
					return err
				}
			}
			if err := e.after(e.stream, in, events[evPerChunk*c+evIn]); err != nil {
				return err
			}
		}
		if err := compute(k); err != nil {
			return err
		}
		if piped {
			if err := e.after(out, e.stream, events[evPerChunk*c+evComputed]); err != nil {
				return err
			}
		}
		if err := transfer(out, false, k.out, k.out+outBytes*k.n); err != nil {
			return err
		}
		if counted {
			if err := transfer(out, false, k.count, k.count+4); err != nil {
				return err
			}
		}
		if piped {
			if err := events[evPerChunk*c+evOut].Record(out); err != nil {
				return err
			}
			for consumed <= c-pipeLag {
				if err := consume(); err != nil {
					return err
				}
			}
		}
	}
	for consumed < chunks {
		if err := consume(); err != nil {
			return err
		}
	}
	return nil
}

// after makes future work on s wait for the work queued so far on prior,
// through ev.
func (e *gpuEngine) after(s, prior *gpu.Stream, ev *gpu.Event) error {
	if err := ev.Record(prior); err != nil {
		return err
	}
	return s.Wait(ev)
}

// copyIn copies jobs [first, first+n) of the batch into the pinned buffer
// laid out as l, on up to e.workers goroutines.
func (e *gpuEngine) copyIn(l stageLayout, hashes []uint64, locs []uint32, first, n int) {
	hh := hostView[uint64](e, l.hashes+8*first, n)
	var hl []uint32
	if locs != nil {
		hl = hostView[uint32](e, l.locs+4*first, n)
	}
	forRanges(n, e.workers, func(lo, hi int) {
		copy(hh[lo:hi], hashes[first+lo:first+hi])
		if locs != nil {
			copy(hl[lo:hi], locs[first+lo:first+hi])
		}
	})
}
