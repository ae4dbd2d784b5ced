package btree

import (
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// Buffers of uploadSortHalves: the two sorted halves merged.
const (
	bufMergedK   = "halves.keys"
	bufMergedIdx = "halves.idx"
	// A third part or more: the merged runs alternate between these and
	// the two above.
	bufMergedK2   = "halves.keys2"
	bufMergedIdx2 = "halves.idx2"
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

// partEnds returns the ends of the parts of a split upload of n keys
// (uploadSortHalves): two parts, the first firstPart's share, or from Go
// slices the parts a benchmark set (cutEighths: the inner cuts, in
// eighths of the batch). Cost: O(parts).
func (g *gpuTree) partEnds(n int, pinned bool) []int {
	if pinned || len(g.cutEighths) == 0 {
		return []int{firstPart(n, pinned), n}
	}
	ends := make([]int, 0, len(g.cutEighths)+1)
	for _, e := range g.cutEighths {
		ends = append(ends, n/8*e)
	}
	return append(ends, n)
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
// part is on the device (the first part's sort inside it). With more
// parts (partEnds: a benchmark's cuts) each later part is copied while the
// one before is sorted, then sorted and merged into the run of the parts
// before it (the merged runs alternate between two buffer pairs). k, v
// are inK, inV of n elements; the caller has reserved sortidx, selidx and
// outV. Cost: the transfers, a radix sort per part, a merge per part
// after the first and the dedupe's kernels.
func (g *gpuTree) uploadSortHalves(k, v *gpu.Buffer[uint64], keys, values []uint64, tr transfers) error {
	n := len(keys)
	ends := g.partEnds(n, tr.pinned)
	need := []gpu.Need{gpu.NeedOf[uint64](bufMergedK, n), gpu.NeedOf[uint32](bufMergedIdx, n)}
	if len(ends) > 2 {
		need = append(need, gpu.NeedOf[uint64](bufMergedK2, n), gpu.NeedOf[uint32](bufMergedIdx2, n))
	}
	if err := g.pool.Reserve(need...); err != nil {
		return err
	}
	idx := gpu.Take[uint32](g.pool, "sortidx", n)
	// s2's transfers (the later parts, then the values) come after s's
	// earlier use of inK and inV.
	if err := g.fork(); err != nil {
		return err
	}
	h := ends[0]
	if err := upload(tr, g.s, k, 0, keys[:h]); err != nil {
		return err
	}
	g.step("upload keys: first half")
	if err := g.launch(g.k.iota, n, uint64(n), idx); err != nil {
		return err
	}
	runK, runI := gpu.View[uint64](k, 0, h), gpu.View[uint32](idx, 0, h)
	if err := prim.DevSortPairs(g.pe, runK, runI, h); err != nil {
		return err
	}
	for p := 1; p < len(ends); p++ {
		lo, hi := ends[p-1], ends[p]
		if err := upload(tr, g.s2, k, lo, keys[lo:hi]); err != nil {
			return err
		}
		if err := g.joinBack(); err != nil {
			return err
		}
		if p == len(ends)-1 {
			g.clock.Mark(g.s, engine.MarkUploaded)
		}
		g.step(partStep(p, len(ends), false))
		kb, ib := gpu.View[uint64](k, 8*lo, hi-lo), gpu.View[uint32](idx, 4*lo, hi-lo)
		if err := prim.DevSortPairs(g.pe, kb, ib, hi-lo); err != nil {
			return err
		}
		mk, mi := gpu.Take[uint64](g.pool, bufMergedK, n), gpu.Take[uint32](g.pool, bufMergedIdx, n)
		if p%2 == 0 {
			mk, mi = gpu.Take[uint64](g.pool, bufMergedK2, n), gpu.Take[uint32](g.pool, bufMergedIdx2, n)
		}
		if err := prim.DevMerge(g.pe, runK, runI, lo, kb, ib, hi-lo, mk, mi); err != nil {
			return err
		}
		runK, runI = mk, mi
		g.step(partStep(p, len(ends), true))
	}
	return g.dedupeValuesLater(tr, n, runK, runI, v, values)
}

// partStep names uploadSortHalves' trace step that ends once part p (from
// 0) of parts is on the device (merged: once it is sorted and merged with
// the parts before): with two parts the names tests look for.
func partStep(p, parts int, merged bool) string {
	switch {
	case parts == 2 && merged:
		return stepHalves
	case parts == 2:
		return "sort first half; upload keys: second half"
	case merged:
		return fmt.Sprintf("sort part %d, merge", p+1)
	}
	return fmt.Sprintf("sort part %d; upload keys: part %d", p, p+1)
}
