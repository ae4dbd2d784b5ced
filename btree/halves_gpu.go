package btree

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// Buffers of uploadSortHalves: the two sorted halves merged.
const (
	bufMergedK   = "halves.keys"
	bufMergedIdx = "halves.idx"
)

// firstPart returns how many of a split batch's n keys go in the first
// part (uploadSortHalves): half by DMA from pinned memory, 5/8 from Go
// slices. There the host's copy into pinned memory is the slower side
// (0.34 ms per million keys on the H200 host at 23.5 GB/s, against about
// 0.19 ms per million (key, position) pairs for the sort), so a larger
// first part still sorts within the copy of the rest and leaves a smaller
// sort after it. Cost: O(1).
func firstPart(n int, pinned bool) int {
	if pinned {
		return n / 2
	}
	return n / 8 * 5
}

// stepHalves names the trace step of the second part's sort and the merge
// of the two parts (tests look for it).
const stepHalves = "sort second half, merge"

// splitUpload reports whether a batch of n pairs whose values upload
// during the sort (overlapSort) has its keys uploaded and sorted in two
// parts (uploadSortHalves): each part at least stageMin keys (so that
// both go through the pinned ring), unless a benchmark turned it off
// (wholeUpload). Cost: O(1).
func (g *gpuTree) splitUpload(n int) bool { return !g.wholeUpload && n >= 3*stageMin }

// uploadSortHalves is uploadSortDedupe's overlapped path with the keys in
// two parts ("halves"; the first is firstPart's share): the first part's
// keys are copied through the pinned ring (from a pinned Staging, tr: by
// DMA) on the tree's stream and sorted there as (key, batch position)
// pairs while the host copies the second part, whose transfer goes on the
// second stream; that part is sorted next, the two runs are merged
// (prim.DevMerge: on equal keys the first part's come first, so the
// batch's last occurrence stays last), and the merged pairs are deduped.
// Then the values' upload starts as in uploadSortDedupe. The host copy of
// the second part overlaps the first part's sort: the sort no longer
// waits for the whole batch's copy. The Upload phase ends when the second
// part is on the device (the first part's sort inside it). k, v are inK,
// inV of n elements; the caller has reserved sortidx, selidx and outV.
// Cost: the transfers, two radix sorts (of firstPart and the rest), a
// merge and the dedupe's kernels.
func (g *gpuTree) uploadSortHalves(k, v *gpu.Buffer[uint64], keys, values []uint64, tr transfers) error {
	n := len(keys)
	h := firstPart(n, tr.pinned)
	if err := g.pool.Reserve(gpu.NeedOf[uint64](bufMergedK, n), gpu.NeedOf[uint32](bufMergedIdx, n)); err != nil {
		return err
	}
	idx := gpu.Take[uint32](g.pool, "sortidx", n)
	mk, mi := gpu.Take[uint64](g.pool, bufMergedK, n), gpu.Take[uint32](g.pool, bufMergedIdx, n)
	ka, kb := gpu.View[uint64](k, 0, h), gpu.View[uint64](k, 8*h, n-h)
	ia, ib := gpu.View[uint32](idx, 0, h), gpu.View[uint32](idx, 4*h, n-h)
	// s2's transfers (the second half, then the values) come after s's
	// earlier use of inK and inV.
	if err := g.fork(); err != nil {
		return err
	}
	if err := upload(tr, g.s, k, 0, keys[:h]); err != nil {
		return err
	}
	g.step("upload keys: first half")
	if err := g.launch(g.k.iota, n, uint64(n), idx); err != nil {
		return err
	}
	if err := prim.DevSortPairs(g.pe, ka, ia, h); err != nil {
		return err
	}
	if err := upload(tr, g.s2, k, h, keys[h:]); err != nil {
		return err
	}
	if err := g.joinBack(); err != nil {
		return err
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.step("sort first half; upload keys: second half")
	if err := prim.DevSortPairs(g.pe, kb, ib, n-h); err != nil {
		return err
	}
	if err := prim.DevMerge(g.pe, ka, ia, h, kb, ib, n-h, mk, mi); err != nil {
		return err
	}
	g.step(stepHalves)
	return g.dedupeValuesLater(tr, n, mk, mi, v, values)
}
