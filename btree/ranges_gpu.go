package btree

import (
	"errors"
	"sync"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// rangeForm is a choice of the GPU engine's range kernels
// (gpuTree.rangeForm).
type rangeForm int

const (
	// rangeOneDescent, the default: bt_range_start (one thread per query)
	// descends once, keeps where the query's pairs start and counts them;
	// after the scan of the counts, bt_range_copy (one warp per query)
	// copies them from there with coalesced loads and stores.
	rangeOneDescent rangeForm = iota
	// rangeThread: bt_range in both passes, one thread per query, each
	// pass descending and comparing keys.
	rangeThread
	// rangeWarp: bt_range_warp in both passes, one warp per query that
	// descends once (the write pass starts where the count pass kept).
	rangeWarp
)

// rangesBatch answers range queries on the device: a count pass (one
// descent per query, the counts and, in the default form, where each
// query's pairs start), prim's exclusive scan of the counts, one read of
// the total, then the write pass (the default form copies from the kept
// starts without a descent; see rangeForm). The host allocates the result
// while the device writes it; the offsets, keys and values come back
// through the pinned staging buffers (copied out of pinned memory in
// parallel, overlapping the later chunks' DMAs). The tree must not be
// empty. Cost: two kernels, a scan, the transfers of the queries and the
// result, one read of the total in between.
func (g *gpuTree) rangesBatch(root uint32, los, his []uint64, limit int) (keys, values []uint64, offsets []int, tm engine.Timings, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := len(los)
	g.clock.Start()
	g.clock.Mark(g.s, engine.MarkStart)
	g.down.Discard()
	if err := g.pool.Reserve(gpu.NeedOf[uint64](bufInK, q), gpu.NeedOf[uint64](bufInV, q), gpu.NeedOf[uint64](bufOutV, q+1),
		gpu.NeedOf[uint64]("rangestart", q)); err != nil {
		return nil, nil, nil, tm, err
	}
	lo, hi := gpu.Take[uint64](g.pool, bufInK, q), gpu.Take[uint64](g.pool, bufInV, q)
	counts, start := gpu.Take[uint64](g.pool, bufOutV, q+1), gpu.Take[uint64](g.pool, "rangestart", q)
	if err := errors.Join(gpu.UploadStaged(g.up, g.s, lo, 0, los), gpu.UploadStaged(g.up, g.s, hi, 0, his),
		gpu.View[uint64](counts, 8*q, 1).FillBytes(g.s, 0)); err != nil {
		return nil, nil, nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	p := rangePass{g: g, lo: lo, hi: hi, q: q, root: root, counts: counts, start: start}
	if limit > 0 {
		p.limit = uint64(limit)
	}
	if err := p.count(); err != nil {
		return nil, nil, nil, tm, err
	}
	if err := prim.DevScanExclusive(g.pe, counts, counts, q+1); err != nil {
		return nil, nil, nil, tm, err
	}
	var tot [1]uint64
	if err := errors.Join(counts.Read(g.s, q, tot[:]), g.s.Synchronize()); err != nil {
		return nil, nil, nil, tm, err
	}
	total := int(tot[0])
	if err := g.pool.Reserve(gpu.NeedOf[uint64](bufOutK, total), gpu.NeedOf[uint64]("rangev", total)); err != nil {
		return nil, nil, nil, tm, err
	}
	// outV holds the offsets; the values go to a scratch buffer of their own.
	ok, ov := gpu.Take[uint64](g.pool, bufOutK, total), gpu.Take[uint64](g.pool, "rangev", total)
	if total > 0 {
		if err := p.write(ok, ov); err != nil {
			return nil, nil, nil, tm, err
		}
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	// The host's allocations (zeroing, the large ones on goroutines of
	// their own) overlap the write pass.
	var wg sync.WaitGroup
	wg.Go(func() { keys = make([]uint64, total) })
	wg.Go(func() { values = make([]uint64, total) })
	offsets = make([]int, q+1)
	wg.Wait()
	offWords := unsafe.Slice((*uint64)(unsafe.Pointer(&offsets[0])), q+1) // int is 64-bit (below)
	if err := errors.Join(gpu.DownloadStaged(g.down, g.s, counts, 0, offWords), gpu.DownloadStaged(g.down, g.s, ok, 0, keys),
		gpu.DownloadStaged(g.down, g.s, ov, 0, values)); err != nil {
		return nil, nil, nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkDone)
	if err := errors.Join(g.down.Drain(), g.s.Synchronize()); err != nil {
		return nil, nil, nil, tm, err
	}
	return keys, values, offsets, g.clock.Timings("ranges", q), nil
}

// rangePass holds the arguments of a batch's range kernels.
type rangePass struct {
	g             *gpuTree
	lo, hi        *gpu.Buffer[uint64] // the queries' inclusive bounds
	q             int
	limit         uint64 // 0: none
	root          uint32
	counts, start *gpu.Buffer[uint64] // per query: pairs (then their scan), where they start
}

// count launches the count pass of the tree's rangeForm: counts[i] (and
// start[i] in the default and warp forms) for every query.
func (p rangePass) count() error {
	g := p.g
	switch g.rangeForm {
	case rangeWarp:
		return g.k.rngWarp.Launch(g.s, warpGrid(p.q), gpu.D1(kernelBlock), 0, p.lo, p.hi, uint64(p.q), p.limit, p.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, g.next, 0, p.counts, p.start, p.counts, p.counts, p.counts)
	case rangeThread:
		return g.k.rng.Launch(g.s, grid(p.q), gpu.D1(kernelBlock), 0, p.lo, p.hi, uint64(p.q), p.limit, p.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, g.next, 0, p.counts, p.counts, p.counts, p.counts)
	}
	return g.k.rngStart.Launch(g.s, grid(p.q), gpu.D1(kernelBlock), 0, p.lo, p.hi, uint64(p.q), p.limit, p.root,
		uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, g.next, p.start, p.counts)
}

// write launches the write pass of the tree's rangeForm: every query's
// pairs into outK, outV at its scanned offset (counts, after the scan).
func (p rangePass) write(outK, outV *gpu.Buffer[uint64]) error {
	g := p.g
	switch g.rangeForm {
	case rangeWarp:
		return g.k.rngWarp.Launch(g.s, warpGrid(p.q), gpu.D1(kernelBlock), 0, p.lo, p.hi, uint64(p.q), p.limit, p.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, g.next, 1, p.counts, p.start, p.counts, outK, outV)
	case rangeThread:
		return g.k.rng.Launch(g.s, grid(p.q), gpu.D1(kernelBlock), 0, p.lo, p.hi, uint64(p.q), p.limit, p.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, g.next, 1, p.counts, p.counts, outK, outV)
	}
	return g.k.rngCopy.Launch(g.s, warpGrid(p.q), gpu.D1(kernelBlock), 0, uint64(p.q), uint32(g.order), g.keys, g.slots,
		g.count, g.next, p.start, p.counts, outK, outV)
}

// Offsets are read from the device's 64-bit words straight into []int.
var _ [1]struct{} = [unsafe.Sizeof(int(0)) / 8]struct{}{}
