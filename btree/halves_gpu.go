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

// stepHalves names the trace step of the second half's sort and the merge
// of the halves (tests look for it).
const stepHalves = "sort second half, merge"

// splitUpload reports whether a batch of n pairs whose values upload
// during the sort (overlapSort) has its keys uploaded and sorted in two
// halves (uploadSortHalves): each half at least stageMin keys, unless a
// benchmark turned it off (wholeUpload). Cost: O(1).
func (g *gpuTree) splitUpload(n int) bool { return !g.wholeUpload && n >= 2*stageMin }

// uploadSortHalves is uploadSortDedupe's overlapped path with the keys in
// two halves: the first half's keys are copied through the pinned ring
// (from a pinned Staging, tr: by DMA) on the tree's stream and sorted there as (key, batch position) pairs while
// the host copies the second half, whose transfer goes on the second
// stream; that half is sorted next, the two runs are merged (prim.DevMerge:
// on equal keys the first half's come first, so the batch's last
// occurrence stays last), and the merged pairs are deduped. Then the
// values' upload starts as in uploadSortDedupe. The host copy of the second
// half overlaps the first half's sort: the sort no longer waits for the
// whole batch's copy. The Upload phase ends when the second half is on the
// device (the first half's sort inside it). k, v are inK, inV of n
// elements; the caller has reserved sortidx, selidx and outV. Cost: the
// transfers, two radix sorts of half the batch, a merge, the dedupe's
// kernels and one synchronization.
func (g *gpuTree) uploadSortHalves(k, v *gpu.Buffer[uint64], keys, values []uint64, tr transfers) (int, error) {
	n := len(keys)
	h := n / 2
	if err := g.pool.Reserve(gpu.NeedOf[uint64](bufMergedK, n), gpu.NeedOf[uint32](bufMergedIdx, n)); err != nil {
		return 0, err
	}
	idx := gpu.Take[uint32](g.pool, "sortidx", n)
	mk, mi := gpu.Take[uint64](g.pool, bufMergedK, n), gpu.Take[uint32](g.pool, bufMergedIdx, n)
	ka, kb := gpu.View[uint64](k, 0, h), gpu.View[uint64](k, 8*h, n-h)
	ia, ib := gpu.View[uint32](idx, 0, h), gpu.View[uint32](idx, 4*h, n-h)
	// s2's transfers (the second half, then the values) come after s's
	// earlier use of inK and inV.
	if err := g.fork(); err != nil {
		return 0, err
	}
	if err := upload(tr, g.s, k, 0, keys[:h]); err != nil {
		return 0, err
	}
	g.step("upload keys: first half")
	if err := g.launch(g.k.iota, n, uint64(n), idx); err != nil {
		return 0, err
	}
	if err := prim.DevSortPairs(g.pe, ka, ia, h); err != nil {
		return 0, err
	}
	if err := upload(tr, g.s2, k, h, keys[h:]); err != nil {
		return 0, err
	}
	if err := g.joinBack(); err != nil {
		return 0, err
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.step("sort first half; upload keys: second half")
	if err := prim.DevSortPairs(g.pe, kb, ib, n-h); err != nil {
		return 0, err
	}
	if err := prim.DevMerge(g.pe, ka, ia, h, kb, ib, n-h, mk, mi); err != nil {
		return 0, err
	}
	g.step(stepHalves)
	return g.dedupeValuesLater(tr, n, mk, mi, v, values)
}
