package btree

import (
	"errors"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// rangesBatch answers range queries in two passes on the device: bt_range
// counts each query's pairs, prim's exclusive scan places them, bt_range
// writes them, one thread per query descending in each pass (with
// warpRanges, bt_range_warp instead: one warp per query, which descends
// once, keeps where each walk starts for the write pass and reads the
// leaves 32 entries per coalesced load). The offsets, keys and values come
// back through the pinned staging buffers (copied out of pinned memory in
// parallel, overlapping the later chunks' DMAs). The tree must not be
// empty. Cost: two kernels, a scan, the transfers of the queries and the
// result, one read of the total in between.
func (g *gpuTree) rangesBatch(root uint32, los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := len(los)
	lim := uint64(0)
	if limit > 0 {
		lim = uint64(limit)
	}
	g.down.Discard()
	lo, err := gpu.Get[uint64](g.pool, bufInK, q)
	if err != nil {
		return nil, nil, nil, err
	}
	hi, err := gpu.Get[uint64](g.pool, bufInV, q)
	if err != nil {
		return nil, nil, nil, err
	}
	counts, err := gpu.Get[uint64](g.pool, bufOutV, q+1)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := errors.Join(gpu.UploadStaged(g.up, g.s, lo, 0, los), gpu.UploadStaged(g.up, g.s, hi, 0, his),
		gpu.View[uint64](counts, 8*q, 1).FillBytes(g.s, 0)); err != nil {
		return nil, nil, nil, err
	}
	start, err := gpu.Get[uint64](g.pool, "rangestart", q)
	if err != nil {
		return nil, nil, nil, err
	}
	launch := func(write int, offs, ok, ov *gpu.Buffer[uint64]) error {
		if g.warpRanges {
			return g.k.rngWarp.Launch(g.s, warpGrid(q), gpu.D1(kernelBlock), 0, lo, hi, uint64(q), lim, root, uint32(g.height),
				uint32(g.order), g.keys, g.slots, g.count, g.next, write, counts, start, offs, ok, ov)
		}
		return g.k.rng.Launch(g.s, grid(q), gpu.D1(kernelBlock), 0, lo, hi, uint64(q), lim, root, uint32(g.height),
			uint32(g.order), g.keys, g.slots, g.count, g.next, write, counts, offs, ok, ov)
	}
	if err := launch(0, counts, counts, counts); err != nil {
		return nil, nil, nil, err
	}
	if err := prim.DevScanExclusive(g.pe, counts, counts, q+1); err != nil {
		return nil, nil, nil, err
	}
	var tot [1]uint64
	if err := errors.Join(counts.Read(g.s, q, tot[:]), g.s.Synchronize()); err != nil {
		return nil, nil, nil, err
	}
	total := int(tot[0])
	offsets = make([]int, q+1)
	offWords := unsafe.Slice((*uint64)(unsafe.Pointer(&offsets[0])), q+1) // int is 64-bit (below)
	if err := gpu.DownloadStaged(g.down, g.s, counts, 0, offWords); err != nil {
		return nil, nil, nil, err
	}
	keys, values = make([]uint64, total), make([]uint64, total)
	if total > 0 {
		ok, err := gpu.Get[uint64](g.pool, bufOutK, total)
		if err != nil {
			return nil, nil, nil, err
		}
		// outV holds the offsets; the values go to a scratch buffer of their own.
		ov, err := gpu.Get[uint64](g.pool, "rangev", total)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := errors.Join(launch(1, counts, ok, ov), gpu.DownloadStaged(g.down, g.s, ok, 0, keys),
			gpu.DownloadStaged(g.down, g.s, ov, 0, values)); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := errors.Join(g.down.Drain(), g.s.Synchronize()); err != nil {
		return nil, nil, nil, err
	}
	return keys, values, offsets, nil
}

// Offsets are read from the device's 64-bit words straight into []int.
var _ [1]struct{} = [unsafe.Sizeof(int(0)) / 8]struct{}{}
