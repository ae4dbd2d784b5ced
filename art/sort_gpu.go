package art

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// uploadSorted is the start of a build, insert or delete (g.mu held): the
// batch's clock started, kb uploaded as the batch and its descriptor set,
// then sorted and deduplicated on the device (sortBatch): the batch, the
// order of its n distinct keys. A batch of keyParts' two parts is
// uploaded part by part on g.in, each part's share of the sort's round 0
// queued on g.s as soon as it is (uploadPart): the host packs part 1
// while the device sorts part 0; when its keys all have one length
// (keysLength) its offsets are written on the device (as_offsets), not
// uploaded. vals, if not nil, start uploading
// beside the work once the sort's first round is queued (startVals, on
// another goroutine; the caller waits for them with waitVals before the
// first kernel that reads them, or drops them with dropVals). mid, when not nil, runs once on the host between
// the parts (or after the upload of a batch in one part): device work
// queued there overlaps the next part's packing. The upload and sort
// phases are marked. Cost: the upload and sortBatch.
func (g *gpuEngine) uploadSorted(kb Keys, vals []uint64, mid func() error) (*devBatch, *gpu.Buffer[uint32], int, error) {
	g.start()
	bounds := g.bu.keyParts(kb.Len())
	var b *devBatch
	var err error
	if len(bounds) == 2 {
		b, err = g.uploadKeys("batch", kb, vals != nil, false)
	} else {
		b, err = g.reserveBatch("batch", kb, vals != nil)
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("upload: %w", err)
	}
	if err := g.setDesc(g.t, b); err != nil {
		return nil, nil, 0, err
	}
	withOffs := true
	if len(bounds) > 2 {
		if l, ok := g.keysLength(kb); ok {
			if err := g.launch(g.k.sOffsets, kb.Len()+1, uint64(kb.Len()+1), uint32(l), b.offs); err != nil {
				return nil, nil, 0, fmt.Errorf("upload: %w", err)
			}
			withOffs = false
		}
	}
	arrive := func(p int) error {
		if len(bounds) > 2 {
			if err := g.uploadPart(b, kb, bounds, p, withOffs); err != nil {
				return fmt.Errorf("upload: %w", err)
			}
		}
		if p+2 == len(bounds) {
			g.clock.Mark(g.s, engine.MarkUploaded)
			g.step("upload")
		}
		if p == 0 && mid != nil {
			return mid()
		}
		return nil
	}
	beside := func() error {
		if vals == nil {
			return nil
		}
		return g.startVals(b, vals)
	}
	order, n, err := g.sortBatch(b, bounds, arrive, beside)
	if err != nil {
		return nil, nil, 0, errors.Join(err, g.dropVals(), g.in.Synchronize())
	}
	g.clock.Mark(g.s, engine.MarkSorted)
	return b, order, n, nil
}

// sortBatch sorts the batch's keys on the device, stably, and keeps the
// last of each run of equal keys: the first m entries of the returned
// buffer are the sorted distinct batch positions, the permutation the CPU
// engine's sortedOrder and lastOfRuns give. Round j sorts the keys still
// tied after j rounds by their bytes [7j, 7j+7) and a length clamp
// (art.cu's chunk_of): a stable radix sort by the chunk, then a stable one
// by the tie's run (its first place), so each run is reordered in place;
// keys that stay tied and go on past the chunk go to the next round.
// Random keys take one round. Every round also runs the dedupe (as_last
// and a select over the whole batch) and reads both counts back at once:
// after the last round (no ties left) that dedupe is the answer, so a sort
// costs one readback per round.
//
// The keys arrive in the parts bounds names (keyParts): arrive(p) queues
// part p's upload (or only marks it, for one part) before round 0 reads
// it. With two parts, round 0 chunks and sorts each part's places as it
// arrives and merges the two sorted runs (DevMerge, stable: part 0's
// first on equal chunks), which orders the pairs (chunk, place) as one
// stable sort of all of them. beside runs once, after the first round's
// kernels are queued and before its readback (the host work it does
// overlaps them). Cost per round: two radix sorts (round 0: one, or one
// per part and a merge, and its marks and dedupe compare the sorted
// chunks, not the keys), three scans and selects of the tied keys, the
// dedupe's kernel and select, one readback.
func (g *gpuEngine) sortBatch(b *devBatch, bounds []int, arrive func(p int) error, beside func() error) (*gpu.Buffer[uint32], int, error) {
	n := b.n
	names := []string{"sort.perm", "sort.aposA", "sort.aposB", "sort.arunA", "sort.arunB", "sort.cv", "sort.k2", "sort.v2",
		"sort.tmp", "sort.start", "sort.grp", "sort.first", "sort.order"}
	needs := append(needsOf[uint32](n, names...), gpu.NeedOf[uint64]("sort.ck", n), gpu.NeedOf[uint8]("sort.unres", n),
		gpu.NeedOf[uint32]("sort.cnt", 2))
	parts := len(bounds) - 1
	if parts > 1 {
		needs = append(needs, gpu.NeedOf[uint64]("sort.ck2", n))
	}
	if err := g.pool.Reserve(needs...); err != nil {
		return nil, 0, fmt.Errorf("sort: %w", err)
	}
	if n == 0 {
		if err := arrive(0); err != nil {
			return nil, 0, err
		}
		return gpu.Take[uint32](g.pool, "sort.order", 0), 0, beside()
	}
	bufs := takeAll[uint32](g.pool, n, names...)
	perm, apos, apos2, arun, arun2, cv, k2, v2, tmp, start, grp, first, order :=
		bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8], bufs[9], bufs[10], bufs[11], bufs[12]
	ck, unres, cnts := gpu.Take[uint64](g.pool, "sort.ck", n), gpu.Take[uint8](g.pool, "sort.unres", n), gpu.Take[uint32](g.pool, "sort.cnt", 2)
	cnt, dcnt := gpu.View[uint32](cnts, 0, 1), gpu.View[uint32](cnts, 4, 1) // tied keys left; distinct keys
	k := g.k
	if err := firstErr(g.launch(k.iota, n, uint64(n), perm), g.launch(k.iota, n, uint64(n), apos), arun.FillBytes(g.s, 0)); err != nil {
		return nil, 0, fmt.Errorf("sort: %w", err)
	}
	// Round 0's chunks of every part, sorted: in ck and cv for one
	// part, merged into ck2 and v2 for two.
	sck0, rv0 := ck, cv
	for p := 0; p < parts; p++ {
		lo, hi := bounds[p], bounds[p+1]
		if err := arrive(p); err != nil {
			return nil, 0, err
		}
		if err := firstErr(g.launch(k.sChunk, hi-lo, g.descBuf, uint64(hi-lo), uint64(lo), perm, apos, uint32(0), ck, cv),
			prim.DevSortPairs(g.pe, gpu.View[uint64](ck, 8*lo, hi-lo), gpu.View[uint32](cv, 4*lo, hi-lo), hi-lo)); err != nil {
			return nil, 0, fmt.Errorf("sort round 0: part %d: %w", p, err)
		}
		if parts > 1 {
			g.stepN("sort part %d", p)
		}
	}
	if parts > 1 {
		h := bounds[1]
		sck0, rv0 = gpu.Take[uint64](g.pool, "sort.ck2", n), v2
		if err := prim.DevMerge(g.pe, gpu.View[uint64](ck, 0, h), gpu.View[uint32](cv, 0, h), h,
			gpu.View[uint64](ck, 8*h, n-h), gpu.View[uint32](cv, 4*h, n-h), n-h, sck0, rv0); err != nil {
			return nil, 0, fmt.Errorf("sort round 0: merge: %w", err)
		}
	}
	m, distinct := n, 0
	for j := 0; m > 0; j++ {
		// Round 0 has one run (arun is all 0): no run keys, no second
		// sort; the run keys are arun itself and the order rv0. It
		// sorted every key by chunk 0 above, so its sorted chunks sck0
		// are in place order, for as_marks and as_last to compare
		// instead of reading the keys again.
		var sck any = nullPtr
		rk, rv := k2, v2
		if j == 0 {
			sck, rk, rv = sck0, arun, rv0
		}
		steps := []func() error{
			func() error {
				if j == 0 {
					return nil
				}
				return firstErr(g.launch(k.sChunk, m, g.descBuf, uint64(m), uint64(0), perm, apos, uint32(j), ck, cv),
					prim.DevSortPairs(g.pe, ck, cv, m),
					g.launch(k.sRunkey, m, uint64(m), cv, arun, k2, v2), prim.DevSortPairs(g.pe, k2, v2, m))
			},
			func() error { return g.launch(k.sPermute, m, uint64(m), perm, apos, rv, tmp) },
			func() error { return g.launch(k.sScatter, m, uint64(m), perm, apos, tmp) },
			func() error {
				return g.launch(k.sMarks, m, g.descBuf, uint64(m), perm, apos, rk, uint32(j), sck, start, unres)
			},
			func() error { return prim.DevScanInclusive(g.pe, start, grp, m) },
			func() error { return g.launch(k.sFirst, m, uint64(m), start, grp, apos, first) },
			func() error { return g.launch(k.sNewrun, m, uint64(m), grp, first, tmp) },
			func() error { return prim.DevSelect(g.pe, apos, unres, apos2, m, cnt) },
			func() error { return prim.DevSelect(g.pe, tmp, unres, arun2, m, cnt) },
			// The last of each run of equal keys, in case no ties are
			// left (unres is read above and written again before the
			// next round's selects).
			func() error { return g.launch(k.sLast, n, g.descBuf, uint64(n), perm, sck, unres) },
			func() error { return prim.DevSelect(g.pe, perm, unres, order, n, dcnt) },
		}
		if j == 0 {
			steps = append(steps, beside)
		}
		for _, f := range steps {
			if err := f(); err != nil {
				return nil, 0, fmt.Errorf("sort round %d: %w", j, err)
			}
		}
		c, err := g.readU32(cnts, 0, 2)
		if err != nil {
			return nil, 0, fmt.Errorf("sort round %d: %w", j, err)
		}
		m, distinct = int(c[0]), int(c[1])
		g.stepN("sort round %d", j)
		apos, apos2 = apos2, apos
		arun, arun2 = arun2, arun
	}
	return order, distinct, nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
