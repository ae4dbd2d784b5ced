package hashindex

import (
	"fmt"
	"unsafe"

	"warpkv/gpu"
)

// gpuEngine keeps the table in device memory. A host-level call stages its
// batch in a pinned host buffer (grouping insert and delete jobs by
// partition there with a stable counting sort on the CPU: simple and
// adequate for now; a device-side grouping can replace it), copies it to a
// device scratch buffer in one transfer, launches one kernel, copies the
// results back into the pinned buffer and synchronizes once. All work is
// queued on the engine's one stream, so the staging buffers are reused
// without further synchronization.
type gpuEngine struct {
	geo     geometry
	maxDisp uint32
	workers int

	dev     *gpu.Device
	ownsDev bool
	stream  *gpu.Stream
	table   *gpu.Buffer[uint32]
	k       *kernelSet // compiled on first use

	host    *gpu.HostBuffer[byte] // pinned staging, grown as needed
	scratch *gpu.Buffer[byte]     // device staging, same layout
	group   groupScratch          // grouping scratch
}

// newGPUEngine allocates and clears the table on d. With ownsDev the engine
// closes d when closed.
func newGPUEngine(r resolved, d *gpu.Device, ownsDev bool, workers int) (*gpuEngine, error) {
	s, err := d.NewStream()
	if err != nil {
		return nil, fmt.Errorf("new stream on %s: %w", d, err)
	}
	t, err := gpu.Alloc[uint32](d, r.geo.words())
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("table of %d buckets: %w", r.geo.buckets, err)
	}
	e := &gpuEngine{geo: r.geo, maxDisp: r.maxDisp, workers: workers, dev: d, ownsDev: ownsDev, stream: s, table: t}
	if err := e.reset(); err != nil {
		t.Free()
		s.Close()
		return nil, err
	}
	return e, nil
}

// kernels returns the compiled kernels, compiling them on first use.
func (e *gpuEngine) kernels() (*kernelSet, error) {
	if e.k == nil {
		k, err := loadKernels(e.dev)
		if err != nil {
			return nil, err
		}
		e.k = k
	}
	return e.k, nil
}

// stageAlign aligns the regions of the staging buffers.
const stageAlign = 16

func alignUp(n int) int { return (n + stageAlign - 1) &^ (stageAlign - 1) }

// stageLayout places a batch in the staging buffers: byte offsets of the
// input arrays (copied in as one range [0, in), in cut to the runs used
// for grouped jobs) and of the output array (copied back as [out, end)).
type stageLayout struct {
	hashes, locs, order, starts int
	in, out, end                int
}

// searchLayout: n hashes in, n uint32 locations out.
func searchLayout(n int) stageLayout {
	in := alignUp(8 * n)
	return stageLayout{in: in, out: in, end: in + alignUp(4*n)}
}

// updateLayout: n grouped jobs and up to maxRuns+1 run offsets in (last,
// so that only the runs used are copied), n results of resultBytes each
// out.
func updateLayout(n, parts, resultBytes int) stageLayout {
	var l stageLayout
	l.locs = alignUp(8 * n)
	l.order = l.locs + alignUp(4*n)
	l.starts = l.order + alignUp(4*n)
	l.in = l.starts + alignUp(4*(maxRuns(n, parts)+1))
	l.out = l.in
	l.end = l.out + alignUp(resultBytes*n)
	return l
}

// stage makes both staging buffers hold at least bytes, reallocating with
// headroom when they are smaller. The previous call has synchronized, so
// the old buffers are idle.
func (e *gpuEngine) stage(bytes int) error {
	size := bytes + bytes/4 + 1<<16
	if e.host == nil || e.host.Len() < bytes {
		if err := e.host.Free(); err != nil {
			return fmt.Errorf("freeing pinned staging: %w", err)
		}
		e.host = nil
		h, err := gpu.AllocHost[byte](e.dev, size)
		if err != nil {
			return fmt.Errorf("pinned staging of %d bytes: %w", size, err)
		}
		e.host = h
	}
	if e.scratch == nil || e.scratch.Len() < bytes {
		if err := e.scratch.Free(); err != nil {
			return fmt.Errorf("freeing device staging: %w", err)
		}
		e.scratch = nil
		b, err := gpu.Alloc[byte](e.dev, size)
		if err != nil {
			return fmt.Errorf("device staging of %d bytes: %w", size, err)
		}
		e.scratch = b
	}
	return nil
}

// hostView returns n elements of T at byte offset off of the pinned
// staging buffer (off is 16-byte aligned, the buffer page-aligned).
func hostView[T uint32 | uint64](e *gpuEngine, off, n int) []T {
	b := e.host.Slice()
	_ = b[off+n*int(unsafe.Sizeof(T(0)))-1] // bounds check
	return unsafe.Slice((*T)(unsafe.Pointer(&b[off])), n)
}

// devView returns n elements of T at byte offset off of the device staging
// buffer.
func devView[T uint32 | uint64](e *gpuEngine, off, n int) *gpu.Buffer[T] {
	return gpu.View[T](e.scratch, off, n)
}

// copyIn queues the transfer of the staged input [0, l.in).
func (e *gpuEngine) copyIn(l stageLayout) error {
	return e.scratch.Write(e.stream, 0, e.host.Slice()[:l.in])
}

// copyOutAndWait queues the transfer of the output [l.out, l.end) back to
// the pinned buffer and waits for the stream.
func (e *gpuEngine) copyOutAndWait(l stageLayout) error {
	if err := e.scratch.Read(e.stream, l.out, e.host.Slice()[l.out:l.end]); err != nil {
		return err
	}
	return e.stream.Synchronize()
}

func (e *gpuEngine) search(hashes []uint64, out []uint32) error {
	n := len(hashes)
	l := searchLayout(n)
	if err := e.stage(l.end); err != nil {
		return err
	}
	copy(hostView[uint64](e, l.hashes, n), hashes)
	if err := e.copyIn(l); err != nil {
		return err
	}
	if err := e.launchSearch(devView[uint64](e, l.hashes, n), n, devView[uint32](e, l.out, n)); err != nil {
		return err
	}
	if err := e.copyOutAndWait(l); err != nil {
		return err
	}
	copy(out, hostView[uint32](e, l.out, n))
	return nil
}

// stageJobs groups the jobs by partition into the pinned buffer laid out
// as l, copies them in and returns their device views.
func (e *gpuEngine) stageJobs(hashes []uint64, locs []uint32, l stageLayout) (DevJobs, error) {
	n := len(hashes)
	if err := e.stage(l.end); err != nil {
		return DevJobs{}, err
	}
	jobs := Jobs{
		Hashes: hostView[uint64](e, l.hashes, n), Locs: hostView[uint32](e, l.locs, n),
		Order:  hostView[uint32](e, l.order, n),
		Starts: hostView[uint32](e, l.starts, maxRuns(n, e.geo.parts)+1),
	}
	runs := groupJobs(e.geo, e.workers, hashes, locs, jobs, &e.group).Runs()
	l.in = l.starts + 4*(runs+1)
	if err := e.copyIn(l); err != nil {
		return DevJobs{}, err
	}
	return DevJobs{
		Hashes: devView[uint64](e, l.hashes, n), Locs: devView[uint32](e, l.locs, n),
		Order: devView[uint32](e, l.order, n), Starts: devView[uint32](e, l.starts, runs+1),
	}, nil
}

func (e *gpuEngine) insert(hashes []uint64, locs []uint32) ([]uint64, error) {
	n := len(hashes)
	l := updateLayout(n, e.geo.parts, 8)
	j, err := e.stageJobs(hashes, locs, l)
	if err != nil {
		return nil, err
	}
	if err := e.launchInsert(j, devView[uint64](e, l.out, n)); err != nil {
		return nil, err
	}
	if err := e.copyOutAndWait(l); err != nil {
		return nil, err
	}
	return hostView[uint64](e, l.out, n), nil
}

func (e *gpuEngine) remove(hashes []uint64, locs []uint32) ([]uint32, error) {
	n := len(hashes)
	l := updateLayout(n, e.geo.parts, 4)
	j, err := e.stageJobs(hashes, locs, l)
	if err != nil {
		return nil, err
	}
	if err := e.launchDelete(j, devView[uint32](e, l.out, n)); err != nil {
		return nil, err
	}
	if err := e.copyOutAndWait(l); err != nil {
		return nil, err
	}
	return hostView[uint32](e, l.out, n), nil
}

// launchSearch queues hix_search for n hashes.
func (e *gpuEngine) launchSearch(hashes *gpu.Buffer[uint64], n int, out *gpu.Buffer[uint32]) error {
	k, err := e.kernels()
	if err != nil {
		return err
	}
	return k.search.Launch(e.stream, searchGrid(n), gpu.D1(searchBlock), 0,
		e.table, e.geo.mask, e.geo.pmask, hashes, uint64(n), out)
}

// launchInsert queues hix_insert over grouped jobs.
func (e *gpuEngine) launchInsert(j DevJobs, results *gpu.Buffer[uint64]) error {
	k, err := e.kernels()
	if err != nil {
		return err
	}
	runs := j.Runs()
	return k.insert.Launch(e.stream, updateGrid(runs), gpu.D1(updateBlock), 0,
		e.table, e.geo.mask, e.geo.pmask, e.maxDisp, j.Hashes, j.Locs, j.Order, j.Starts, uint64(runs), results)
}

// launchDelete queues hix_delete over grouped jobs.
func (e *gpuEngine) launchDelete(j DevJobs, found *gpu.Buffer[uint32]) error {
	k, err := e.kernels()
	if err != nil {
		return err
	}
	runs := j.Runs()
	return k.remove.Launch(e.stream, updateGrid(runs), gpu.D1(updateBlock), 0,
		e.table, e.geo.mask, e.geo.pmask, j.Hashes, j.Locs, j.Order, j.Starts, uint64(runs), found)
}

func (e *gpuEngine) snapshot() ([]uint32, error) {
	out := make([]uint32, e.table.Len())
	if err := e.table.Read(e.stream, 0, out); err != nil {
		return nil, err
	}
	return out, e.stream.Synchronize()
}

func (e *gpuEngine) reset() error {
	if err := e.table.FillBytes(e.stream, 0); err != nil {
		return fmt.Errorf("clearing the table: %w", err)
	}
	return e.stream.Synchronize()
}

func (e *gpuEngine) close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	keep(e.stream.Synchronize())
	keep(e.table.Free())
	keep(e.scratch.Free())
	keep(e.host.Free())
	keep(e.stream.Close())
	if e.ownsDev {
		keep(e.dev.Close())
	}
	return first
}
