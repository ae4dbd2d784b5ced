package hashindex

import (
	"fmt"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// Host-level calls on the GPU engine move their batch through pinned host
// memory and a device staging buffer laid out as stageLayout says (the
// input arrays, then the output array, then per-chunk counters). A slice
// call (Search, Insert, Delete) copies its jobs from Go memory into the
// engine's own pinned buffer, laid out like the device buffer; a staged
// call (SearchStaged, InsertStaged, DeleteStaged) finds them already in a
// Staging's pinned memory and its outputs go straight back there.
//
// A batch of up to chunkJobs jobs (pipeChunk for slice calls, stagedChunk
// for staged ones) is one chunk: the transfer in, the kernels, the
// transfer out and one synchronization, all on the engine's stream. A
// larger batch is cut into chunks that are applied one after another (so
// batch order holds across chunks) and pipelined over three streams: a
// chunk's transfer in (copy stream), its kernels (the engine's stream) and
// its transfer out (out stream) overlap those of its neighbours. A slice
// call copies the next chunks into the pinned buffer and consumes the
// outputs of earlier ones meanwhile; a staged call, whose inputs need no
// copy, queues every transfer in at once (the device buffer holds the
// whole batch), checks the batch on the host while they run (InsertStaged:
// no location NotFound) and only then queues the kernels, so a rejected
// batch leaves the table untouched.

// Staging and pipeline tuning.
const (
	stageAlign = 16 // byte alignment of every array in the staging buffers

	pipeChunk   = 1 << 22 // most jobs of one chunk of a slice call
	stagedChunk = 1 << 20 // most jobs of one chunk of a staged call
	pipeLag     = 2       // chunks of a slice call queued on the device ahead of the one the host consumes

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

// hostBatch is the batch of a host-level call on the GPU engine: n jobs
// either in Go memory (hashes, locs: a slice call) or already in pinned
// memory, jobs [off, off+n) of st (a staged call), whose outputs go to
// the same jobs' places in st's output area.
type hostBatch struct {
	n        int
	off      int          // staged call: the batch's first job in st
	withLocs bool         // update jobs: a location per hash
	hashes   []uint64     // slice call: the hashes
	locs     []uint32     // slice call: the locations, nil for searches
	st       *Staging     // staged call: where the jobs are and the outputs go
	check    func() error // staged call, may be nil: runs while the transfers in do, before any kernel; an error aborts the call
}

// pinnedJobs is where a host-level call's jobs and outputs lie in pinned
// host memory.
type pinnedJobs struct {
	hashes []uint64 // n hashes
	locs   []uint32 // n locations, nil for searches
	out    []byte   // n outputs
	counts []uint32 // a counter per chunk, nil if the call does not count
	dense  []byte   // slice calls: the inputs and padding, laid out as on the device ([0, out) of the layout)
}

// chunk is a range of jobs of a host-level call on the GPU engine, with
// the device views of its inputs, the byte offsets of its output and
// counter in the device staging buffer and their pinned host copies.
type chunk struct {
	index, first, n int
	hashes          *gpu.Buffer[uint64]
	locs            *gpu.Buffer[uint32] // nil for searches
	out             int                 // byte offset of output first
	count           int                 // byte offset of the chunk's counter, -1 if the call does not count
	hostOut         []byte              // the chunk's outputs in pinned memory, valid once the chunk is consumed
	hostCount       []uint32            // the chunk's counter in pinned memory (one element), nil if the call does not count
}

// devCount returns the device address of the chunk's counter, 0 if the
// call does not count.
func devCount(e *gpuEngine, c chunk) gpu.DevicePtr {
	if c.count < 0 {
		return 0
	}
	return e.devStage.PtrAt(c.count)
}

// devOut returns the device view of the chunk's output.
func devOut[T uint32 | uint64](e *gpuEngine, c chunk) *gpu.Buffer[T] {
	return gpu.View[T](e.devStage, c.out, c.n)
}

// viewAs returns n elements of T at byte offset off of b (off a multiple
// of T's size from a suitably aligned start).
func viewAs[T uint32 | uint64](b []byte, off, n int) []T {
	if n == 0 {
		return nil
	}
	_ = b[off+n*int(unsafe.Sizeof(T(0)))-1] // bounds check
	return unsafe.Slice((*T)(unsafe.Pointer(&b[off])), n)
}

// asBytes returns the memory of s as bytes.
func asBytes[T uint32 | uint64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(T(0))))
}

// withHeadroom returns a size a quarter larger than bytes, so that slowly
// growing batches do not reallocate on every call: the growth of the
// engine's pool.
func withHeadroom(bytes int) int { return bytes + bytes/4 + 1<<16 }

// Names of the engine's buffers in its pool.
const (
	bufStage = "stage" // device staging of a host-level call (stageLayout)
	bufJobs  = "jobs"  // grouped jobs of a host-level call's chunk (jobsLayout)
	bufKeys  = "keys"  // partition keys of DevGroup
	bufHost  = "host"  // pinned staging of slice calls, counters of staged calls
)

// pin returns where the jobs and outputs of batch b, laid out on the
// device as l, lie in pinned memory: the engine's pinned buffer, laid out
// as l, for a slice call; the staging's memory, and the engine's buffer
// for the counters, for a staged call.
func (e *gpuEngine) pin(b hostBatch, l stageLayout, outBytes, chunks int, counted bool) (pinnedJobs, error) {
	n := b.n
	var p pinnedJobs
	if b.st == nil {
		h, err := gpu.Host[byte](e.pool, bufHost, l.end)
		if err != nil {
			return p, err
		}
		p = pinnedJobs{hashes: viewAs[uint64](h, l.hashes, n), out: h[l.out : l.out+outBytes*n], dense: h[:l.out]}
		if b.withLocs {
			p.locs = viewAs[uint32](h, l.locs, n)
		}
		if counted {
			p.counts = viewAs[uint32](h, l.counts, chunks)
		}
		return p, nil
	}
	p = pinnedJobs{hashes: b.st.hashes[b.off : b.off+n], out: b.st.outBytes(outBytes*b.off, outBytes*n)}
	if b.withLocs {
		p.locs = b.st.locs[b.off : b.off+n]
	}
	if counted {
		h, err := gpu.Host[byte](e.pool, bufHost, 4*chunks)
		if err != nil {
			return p, err
		}
		p.counts = viewAs[uint32](h, 0, chunks)
	}
	return p, nil
}

// hostCall runs one host-level call over batch b with outBytes of output
// per job and, if counted, a zeroed uint32 counter per chunk for the
// kernels to add to: it reserves the device staging and the job scratch
// of a chunk, then runs the chunks through the engine's pipeline (see
// gpu.Pipeline.Run): each chunk's transfer in, its compute on the engine's
// stream and its transfer out, handing every chunk, in order, to done once
// its output and counter are in pinned memory. A slice call copies its
// jobs into pinned memory chunk by chunk (Pack); a staged call queues every
// transfer in first and runs its check before any kernel. On error the
// streams are idle again when it returns.
func (e *gpuEngine) hostCall(b hostBatch, outBytes int, counted bool, compute func(chunk) error, done func(chunk)) error {
	n := b.n
	most := e.chunkJobs
	if b.st != nil {
		most = e.stagedChunkJobs
	}
	chunks := (n + most - 1) / most
	size := (n + chunks - 1) / chunks // balanced chunks,
	chunks = (n + size - 1) / size    // none of them empty
	l := newStageLayout(n, b.withLocs, outBytes, chunks, counted)
	needs := []gpu.Need{{Name: bufStage, Bytes: l.end}}
	if b.withLocs {
		needs = append(needs, gpu.Need{Name: bufJobs, Bytes: newJobsLayout(size, e.geo.parts).end})
	}
	if err := e.pool.Reserve(needs...); err != nil {
		return fmt.Errorf("device staging: %w", err)
	}
	stage := gpu.Take[byte](e.pool, bufStage, l.end)
	e.devStage = stage
	p, err := e.pin(b, l, outBytes, chunks, counted)
	if err != nil {
		return err
	}
	piped := chunks > 1
	if counted {
		if err := gpu.View[uint32](stage, l.counts, chunks).FillBytes(e.stream, 0); err != nil {
			return err
		}
	}
	at := func(c int) chunk {
		first := c * size
		k := chunk{index: c, first: first, n: min(size, n-first), out: l.out + outBytes*first, count: -1}
		k.hashes = gpu.View[uint64](stage, l.hashes+8*first, k.n)
		if b.withLocs {
			k.locs = gpu.View[uint32](stage, l.locs+4*first, k.n)
		}
		k.hostOut = p.out[outBytes*first : outBytes*(first+k.n)]
		if counted {
			k.count = l.counts + 4*c
			k.hostCount = p.counts[c : c+1]
		}
		return k
	}
	steps := gpu.Steps{
		// In: one copy when a slice call is one chunk (the hashes, the
		// padding and the locations), else the chunk's hashes and
		// locations.
		In: func(in *gpu.Stream, c int) error {
			k := at(c)
			if !piped && p.dense != nil {
				return stage.Write(in, 0, p.dense)
			}
			if err := stage.Write(in, l.hashes+8*k.first, asBytes(p.hashes[k.first:k.first+k.n])); err != nil {
				return err
			}
			if b.withLocs {
				return stage.Write(in, l.locs+4*k.first, asBytes(p.locs[k.first:k.first+k.n]))
			}
			return nil
		},
		Work: func(_ *gpu.Stream, c int) error { return compute(at(c)) },
		Out: func(out *gpu.Stream, c int) error {
			k := at(c)
			if err := stage.Read(out, k.out, k.hostOut); err != nil {
				return err
			}
			if counted {
				return stage.Read(out, k.count, asBytes(k.hostCount))
			}
			return nil
		},
		Done: func(c int) error {
			done(at(c))
			return nil
		},
	}
	if b.st != nil {
		steps.InFirst, steps.Check = true, b.check
	} else {
		steps.Pack = func(c int) error {
			k := at(c)
			e.copyIn(p, b.hashes, b.locs, k.first, k.n)
			return nil
		}
	}
	return e.pipe.Run(e.stream, e.copyStream, e.outStream, chunks, pipeLag, steps)
}

// copyIn copies jobs [first, first+n) of a slice call's batch into the
// pinned buffer p, on up to e.workers goroutines.
func (e *gpuEngine) copyIn(p pinnedJobs, hashes []uint64, locs []uint32, first, n int) {
	hh := p.hashes[first : first+n]
	var hl []uint32
	if locs != nil {
		hl = p.locs[first : first+n]
	}
	par.Ranges(n, hostParts(n, e.workers), func(_, lo, hi int) {
		copy(hh[lo:hi], hashes[first+lo:first+hi])
		if locs != nil {
			copy(hl[lo:hi], locs[first+lo:first+hi])
		}
	})
}
