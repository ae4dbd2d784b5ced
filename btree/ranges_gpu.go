package btree

import (
	"errors"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
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

// rangesBatch answers range queries on the device: the queries' bounds
// (half-open when halfOpen, else inclusive) are converted to inclusive
// ones on all cores straight into the pool's pinned buffer host.q and
// reach the device in one DMA; a count pass (one descent per query, the
// counts and, in the default form, where each query's pairs start),
// prim's exclusive scan of the counts, one read of the total, then the
// write pass (the default form copies from the kept starts without a
// descent; see rangeForm). The host sizes the Result (into, or a new one)
// while the device writes it; a pinned Result (NewResult) takes the
// offsets, keys and values by DMA straight into its arrays, any other
// through the pinned staging buffers (copied out of pinned memory in
// parallel, overlapping the later chunks' DMAs). The tree must not be
// empty. Cost: two kernels, a scan, the transfers of the queries and the
// result, one read of the total in between.
func (g *gpuTree) rangesBatch(into *Result, root uint32, los, his []uint64, limit int, halfOpen bool) (*Result, engine.Timings, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var tm engine.Timings
	q := len(los)
	g.clock.Start()
	g.clock.Mark(g.s, engine.MarkStart)
	g.down.Discard()
	if err := g.pool.Reserve(gpu.NeedOf[uint64]("rangeq", 2*q), gpu.NeedOf[uint64](bufOutV, q+1),
		gpu.NeedOf[uint64]("rangestart", q)); err != nil {
		return nil, tm, err
	}
	bounds := gpu.Take[uint64](g.pool, "rangeq", 2*q)
	lo, hi := gpu.View[uint64](bounds, 0, q), gpu.View[uint64](bounds, 8*q, q)
	counts, start := gpu.Take[uint64](g.pool, bufOutV, q+1), gpu.Take[uint64](g.pool, "rangestart", q)
	h, err := gpu.Host[uint64](g.pool, "host.q", 2*q)
	if err != nil {
		return nil, tm, err
	}
	packBounds(h, los, his, halfOpen, 0)
	if err := errors.Join(bounds.Write(g.s, 0, h), gpu.View[uint64](counts, 8*q, 1).FillBytes(g.s, 0)); err != nil {
		return nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	p := rangePass{g: g, lo: lo, hi: hi, q: q, root: root, counts: counts, start: start}
	if limit > 0 {
		p.limit = uint64(limit)
	}
	if err := p.count(); err != nil {
		return nil, tm, err
	}
	if err := prim.DevScanExclusive(g.pe, counts, counts, q+1); err != nil {
		return nil, tm, err
	}
	var tot [1]uint64
	if err := errors.Join(counts.Read(g.s, q, tot[:]), g.s.Synchronize()); err != nil {
		return nil, tm, err
	}
	total := int(tot[0])
	if err := g.pool.Reserve(gpu.NeedOf[uint64](bufOutK, total), gpu.NeedOf[uint64]("rangev", total)); err != nil {
		return nil, tm, err
	}
	// outV holds the offsets; the values go to a scratch buffer of their own.
	ok, ov := gpu.Take[uint64](g.pool, bufOutK, total), gpu.Take[uint64](g.pool, "rangev", total)
	if total > 0 {
		if err := p.write(ok, ov); err != nil {
			return nil, tm, err
		}
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	// The host's allocations overlap the write pass.
	r, err := sizeResult(into, q, total)
	if err != nil {
		return nil, tm, err
	}
	offWords := unsafe.Slice((*uint64)(unsafe.Pointer(&r.Offsets[0])), q+1) // int is 64-bit (below)
	if r.pinned() {
		err = errors.Join(counts.Read(g.s, 0, offWords), ok.Read(g.s, 0, r.Keys), ov.Read(g.s, 0, r.Values))
	} else {
		err = errors.Join(gpu.DownloadStaged(g.down, g.s, counts, 0, offWords), gpu.DownloadStaged(g.down, g.s, ok, 0, r.Keys),
			gpu.DownloadStaged(g.down, g.s, ov, 0, r.Values))
	}
	if err != nil {
		return nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkDone)
	if err := errors.Join(g.down.Drain(), g.s.Synchronize()); err != nil {
		return nil, tm, err
	}
	return r, g.clock.Timings("ranges", q), nil
}

// rangePackMin is the fewest queries one worker converts.
const rangePackMin = 1 << 14

// packBounds writes the queries' inclusive bounds into h: the lower ones
// in h[:q], the upper ones in h[q:2q], converting half-open ones
// (inclusive) on the workers. Cost: one parallel pass over the bounds.
func packBounds(h, los, his []uint64, halfOpen bool, workers int) {
	q := len(los)
	par.Ranges(q, par.Parts(q, rangePackMin, workers), func(_, a, b int) {
		if !halfOpen {
			copy(h[a:b], los[a:b])
			copy(h[q+a:q+b], his[a:b])
			return
		}
		for i := a; i < b; i++ {
			h[i], h[q+i] = inclusive(los[i], his[i])
		}
	})
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
