package btree

import (
	"errors"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// rangesDesc answers half-open range queries in descending key order on
// the device, in one piece: the bounds are converted to inclusive ones on
// all cores into the pool's pinned buffer host.q and reach the device by
// DMA; bt_range_desc (one thread per query) counts each query's pairs,
// prim's exclusive scan places them, one read brings the total, and
// bt_range_desc writes them; the offsets, keys and values then go to the
// Result (into, or a new one): by DMA into a pinned one (NewResult), else
// through the pinned staging buffers. The tree must not be empty. Phases:
// Upload ends when the queries are counted, Work when their pairs are
// written, Download when every answer is on the host. Cost: two walks per
// query, a scan, the transfers of the bounds and the answers, one
// synchronization in between.
func (g *gpuTree) rangesDesc(into *Result, los, his []uint64, limit int) (*Result, engine.Timings, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var tm engine.Timings
	q := len(los)
	g.start()
	g.down.Discard()
	if err := g.pool.Reserve(gpu.NeedOf[uint64]("rangeq", 2*q), gpu.NeedOf[uint64](bufOutV, q+1)); err != nil {
		return nil, tm, err
	}
	bounds, counts := gpu.Take[uint64](g.pool, "rangeq", 2*q), gpu.Take[uint64](g.pool, bufOutV, q+1)
	h, err := gpu.Host[uint64](g.pool, "host.q", 2*q+1)
	if err != nil {
		return nil, tm, err
	}
	packBounds(h[:q], h[q:2*q], los, his, true, 0)
	lim := uint64(0)
	if limit > 0 {
		lim = uint64(limit)
	}
	lo, hi := gpu.View[uint64](bounds, 0, q), gpu.View[uint64](bounds, 8*q, q)
	pass := func(write int32, outK, outV *gpu.Buffer[uint64]) error {
		return g.k.rngDesc.Launch(g.s, grid(q), gpu.D1(kernelBlock), 0, lo, hi, uint64(q), lim, g.st.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, g.prv, write, counts, counts, outK, outV)
	}
	if err := errors.Join(bounds.Write(g.s, 0, h[:2*q]), pass(0, counts, counts),
		gpu.View[uint64](counts, 8*q, 1).FillBytes(g.s, 0)); err != nil {
		return nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.step("ranges desc: pack, upload, count")
	if err := prim.DevScanExclusive(g.pe, counts, counts, q+1); err != nil {
		return nil, tm, err
	}
	g.trace.Synced()
	if err := errors.Join(counts.Read(g.s, q, h[2*q:]), g.s.Synchronize()); err != nil {
		return nil, tm, err
	}
	g.step("ranges desc: scan, readback: total")
	total := int(h[2*q])
	if err := g.pool.Reserve(gpu.NeedOf[uint64](bufOutK, total), gpu.NeedOf[uint64]("rangev", total)); err != nil {
		return nil, tm, err
	}
	ok, ov := gpu.Take[uint64](g.pool, bufOutK, total), gpu.Take[uint64](g.pool, "rangev", total)
	if total > 0 {
		if err := pass(1, ok, ov); err != nil {
			return nil, tm, err
		}
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	g.step("ranges desc: write")
	r, err := sizeResult(into, q, total)
	if err != nil {
		return nil, tm, err
	}
	offWords := unsafe.Slice((*uint64)(unsafe.Pointer(&r.Offsets[0])), q+1) // int is 64-bit (ranges_gpu.go)
	down := func(b *gpu.Buffer[uint64], dst []uint64) error {
		if len(dst) == 0 {
			return nil
		}
		if r.pinned() {
			return b.Read(g.s, 0, dst)
		}
		return gpu.DownloadStaged(g.down, g.s, b, 0, dst)
	}
	if err := errors.Join(down(counts, offWords), down(ok, r.Keys), down(ov, r.Values)); err != nil {
		return nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkDone)
	if err := errors.Join(g.down.Drain(), g.s.Synchronize()); err != nil {
		return nil, tm, err
	}
	g.step("ranges desc: download")
	return r, g.clock.Timings("ranges", q), nil
}
