package art

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// itemBufs are a build's items on the device (build.go's items).
type itemBufs struct {
	ref, old *gpu.Buffer[uint64]
	n, grp   *gpu.Buffer[uint32]
}

// itemNeeds are the buffers of n items.
func itemNeeds(n int) []gpu.Need {
	return append(needsOf[uint64](n, "items.ref", "items.old"), needsOf[uint32](n, "items.n", "items.grp")...)
}

// takeItems takes the buffers of n items (reserved by itemNeeds).
func (g *gpuEngine) takeItems(n int) itemBufs {
	return itemBufs{ref: gpu.Take[uint64](g.pool, "items.ref", n), old: gpu.Take[uint64](g.pool, "items.old", n),
		n: gpu.Take[uint32](g.pool, "items.n", n), grp: gpu.Take[uint32](g.pool, "items.grp", n)}
}

// segBufs are segments on the device (build.go's segments).
type segBufs struct {
	start, end, d *gpu.Buffer[uint32]
	dst, par      *gpu.Buffer[uint64]
}

// segNeeds are the buffers of n segments named name.
func segNeeds(name string, n int) []gpu.Need {
	return append(needsOf[uint32](n, name+".start", name+".end", name+".d"), needsOf[uint64](n, name+".dst", name+".par")...)
}

// takeSegs takes the buffers of n segments named name (reserved by
// segNeeds).
func (g *gpuEngine) takeSegs(name string, n int) segBufs {
	u := takeAll[uint32](g.pool, n, name+".start", name+".end", name+".d")
	w := takeAll[uint64](g.pool, n, name+".dst", name+".par")
	return segBufs{start: u[0], end: u[1], d: u[2], dst: w[0], par: w[1]}
}

// totMore is the element of a build round's totals (a_totals' ten, then
// ab_count's flag) that says whether the next round has a node segment.
const totMore = 10

// insertOut is where an insert's build rounds put the group links and the
// old nodes' trims (nil buffers for a build), and grow: allocations of each
// kind the first round will likely ask for (zero: no guess), reserved
// while its plan kernels run.
type insertOut struct {
	glink, trimpar *gpu.Buffer[uint64]
	trimd          *gpu.Buffer[uint32]
	grow           [numKinds + 1]uint64
}

// rounds runs builder.run on the device: nIt items, S first segments in
// cur (which tile the items), new records in tree t. Each round: ab_plan,
// ab_pieces, a scan, ab_count, five scans, a_totals read back, the pools
// grown, ab_write, ab_place, ab_close, ab_itemseg. Round 0 grows the pools
// for io.grow after queuing its plan, before its readback. A round whose
// segments are all single items (ab_count's flag in the round before says
// so) makes only leaves: it skips ab_pieces, its scan, ab_place, ab_close
// and ab_itemseg, and is the last. Cost per round: O(items + segments)
// device work (O(segments) for a round of leaves) and one small read.
func (g *gpuEngine) rounds(t *devTree, b *devBatch, it itemBufs, nIt int, cur segBufs, S int, io insertOut) error {
	k := g.k
	names32 := []string{"b.nseg", "b.depth", "b.hterm", "b.children", "b.kind", "b.flag", "b.pex"}
	names64 := []string{"b.r12", "b.r34", "b.r56", "b.r78", "b.abytes", "b.seglink"}
	needs := append(segNeeds("b.segB", nIt), gpu.NeedOf[uint32]("b.iseg", nIt), gpu.NeedOf[uint64]("b.tot", totMore+1))
	needs = append(append(needs, needsOf[uint32](nIt+1, names32...)...), needsOf[uint64](nIt+1, names64...)...)
	if err := g.pool.Reserve(needs...); err != nil {
		return fmt.Errorf("build rounds: %w", err)
	}
	iseg, next, tot := gpu.Take[uint32](g.pool, "b.iseg", nIt), g.takeSegs("b.segB", nIt), gpu.Take[uint64](g.pool, "b.tot", totMore+1)
	u32s := takeAll[uint32](g.pool, nIt+1, names32...)
	nseg, depth, hterm, children, kind, flag, pex := u32s[0], u32s[1], u32s[2], u32s[3], u32s[4], u32s[5], u32s[6]
	u64s := takeAll[uint64](g.pool, nIt+1, names64...)
	r12, r34, r56, r78, abytes, seglink := u64s[0], u64s[1], u64s[2], u64s[3], u64s[4], u64s[5]
	glink, trimd, trimpar := io.glink, io.trimd, io.trimpar
	if glink == nil { // a build: unused, any valid buffer
		glink, trimpar, trimd = seglink, seglink, depth
	}
	if err := firstErr(g.setDesc(t, b), g.launch(k.bSegInit, nIt, uint64(nIt), uint64(S), cur.start, iseg)); err != nil {
		return fmt.Errorf("build rounds: %w", err)
	}
	more := gpu.View[uint64](tot, 8*totMore, 1)
	nodes := true // the round may have a node segment
	for round := 0; S > 0; round++ {
		fail := func(err error) error { return fmt.Errorf("build round %d: %w", round, err) }
		// A round of leaves only (the last one found none of its next
		// segments with several items) has no pieces: its passes over
		// the items are skipped and no round follows.
		pieces := func() error {
			if !nodes {
				return nil
			}
			return firstErr(g.launch(k.bPieces, nIt+1, g.descBuf, uint64(nIt), iseg, cur.start, cur.end, depth, hterm, it.ref, it.n, flag),
				prim.DevScanExclusive(g.pe, flag, pex, nIt+1))
		}
		var pexTot any = pex // a_totals' P: none without pieces
		if !nodes {
			pexTot = nullPtr
		}
		if err := firstErr(
			g.launch(k.bPlan, S, g.descBuf, uint64(S), cur.start, cur.end, cur.d, it.ref, it.n, depth, hterm),
			pieces(),
			more.FillBytes(g.s, 0),
			g.launch(k.bCount, S+1, uint64(S), cur.start, cur.end, hterm, flag, pex, it.old, it.n, children, kind, r12, r34, r56, r78,
				abytes, more),
			prim.DevScanExclusive(g.pe, r12, r12, S+1), prim.DevScanExclusive(g.pe, r34, r34, S+1),
			prim.DevScanExclusive(g.pe, r56, r56, S+1), prim.DevScanExclusive(g.pe, r78, r78, S+1),
			prim.DevScanExclusive(g.pe, abytes, abytes, S+1),
			g.launch(k.totals, 1, uint64(S), r12, r34, r56, r78, abytes, uint64(nIt), pexTot, tot),
		); err != nil {
			return fail(err)
		}
		if round == 0 && io.grow != ([numKinds + 1]uint64{}) {
			// The pools grown for the guess while the device plans
			// (the host's allocations otherwise idle the device
			// between plan and write): out of memory here is left to
			// the exact reservation below.
			if err := g.reserve(t, io.grow, 0); err != nil && !errors.Is(err, gpu.ErrOutOfMemory) {
				return fail(err)
			}
		}
		tv, err := g.readU64(tot, 0, totMore+1)
		if err != nil {
			return fail(err)
		}
		var req [numKinds + 1]uint64
		for kk := kindN4; kk <= kindLV; kk++ {
			req[kk] = tv[kk-1]
		}
		arenaBytes, P := tv[8], int(tv[9])
		g.stepN("build round %d: plan", round)
		if err := g.reserve(t, req, arenaBytes); err != nil {
			return fail(err)
		}
		g.stepN("build round %d: reserve", round)
		if err := firstErr(g.waitVals(), g.setDesc(t, b),
			g.launch(k.bWrite, S, g.descBuf, uint64(S), cur.start, cur.d, cur.dst, cur.par, depth, children, kind,
				r12, r34, r56, r78, abytes, it.ref, it.n, it.old, it.grp, seglink, glink, trimd, trimpar)); err != nil {
			return fail(err)
		}
		t.consume(req, arenaBytes)
		if nodes {
			if err := firstErr(
				g.launch(k.bPlace, nIt, g.descBuf, uint64(nIt), flag, pex, iseg, cur.start, depth, hterm, seglink, it.ref,
					next.start, nseg, next.d, next.dst, next.par),
				g.launch(k.bClose, P, uint64(P), next.start, nseg, cur.end, next.end),
				g.launch(k.bItemseg, nIt, uint64(nIt), flag, pex, cur.start, cur.end, iseg),
			); err != nil {
				return fail(err)
			}
		}
		nodes = tv[totMore] != 0
		g.stepN("build round %d: write", round)
		cur, next = next, cur
		S = P
	}
	return nil
}

// build replaces the tree: upload, sort and dedupe on the device, choose
// the root width from the distinct prefix counts, then the build rounds
// into a new device tree beside the old one (freed on success; on failure
// the old tree stays).
func (g *gpuEngine) build(kb Keys, vals []uint64) (err error) {
	if long, err := longBuild(g, kb, vals); long {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waitFrees()
	b, order, m, err := g.uploadSorted(kb, vals, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.dropVals()) }()
	counts, err := gpu.Get[uint64](g.pool, "b.prefixes", maxWidth)
	if err != nil {
		return fmt.Errorf("prefix counts: %w", err)
	}
	if err := firstErr(counts.FillBytes(g.s, 0), g.launch(g.k.sPrefixes, m, g.descBuf, uint64(m), order, counts)); err != nil {
		return fmt.Errorf("prefix counts: %w", err)
	}
	cv, err := g.readU64(counts, 0, maxWidth)
	if err != nil {
		return err
	}
	var distinct [maxWidth + 1]int
	for w := 1; w <= maxWidth; w++ {
		distinct[w] = int(cv[w-1])
	}
	nt, err := g.newTree(chooseWidth(m, distinct))
	if err != nil {
		return err
	}
	if err := g.buildInto(nt, b, order, m); err != nil {
		return errors.Join(err, g.freeTree(nt))
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	old := g.t
	g.t = nt
	if err := g.freeTree(old); err != nil {
		return err
	}
	return g.finish("build", kb.Len())
}

// buildInto builds the m sorted distinct keys order into the empty tree
// nt: items, root segments (ab_root_flags, a select, ab_root_segs), then
// the rounds.
func (g *gpuEngine) buildInto(nt *devTree, b *devBatch, order *gpu.Buffer[uint32], m int) error {
	if m == 0 {
		return nil
	}
	k := g.k
	needs := append(itemNeeds(m), segNeeds("b.segA", m)...)
	needs = append(needs, gpu.NeedOf[uint64]("b.slot", m), gpu.NeedOf[uint8]("b.rflag", m), gpu.NeedOf[uint32]("b.idx", m),
		gpu.NeedOf[uint32]("b.sel", m), gpu.NeedOf[uint32]("b.cnt", 1))
	if err := g.pool.Reserve(needs...); err != nil {
		return fmt.Errorf("root segments: %w", err)
	}
	it, cur := g.takeItems(m), g.takeSegs("b.segA", m)
	slot, flag := gpu.Take[uint64](g.pool, "b.slot", m), gpu.Take[uint8](g.pool, "b.rflag", m)
	idx, sel, cnt := gpu.Take[uint32](g.pool, "b.idx", m), gpu.Take[uint32](g.pool, "b.sel", m), gpu.Take[uint32](g.pool, "b.cnt", 1)
	if err := firstErr(g.setDesc(nt, b),
		g.launch(k.bItems, m, g.descBuf, uint64(m), order, it.ref, it.n, it.old, it.grp),
		g.launch(k.bRootFlags, m, g.descBuf, uint64(m), it.ref, it.n, slot, flag),
		g.launch(k.iota, m, uint64(m), idx),
		prim.DevSelect(g.pe, idx, flag, sel, m, cnt)); err != nil {
		return fmt.Errorf("root segments: %w", err)
	}
	c, err := g.readU32(cnt, 0, 1)
	if err != nil {
		return err
	}
	S := int(c[0])
	if err := g.launch(k.bRootSegs, S, g.descBuf, uint64(S), uint64(m), sel, slot, it.n, cur.start, cur.end, cur.d, cur.dst, cur.par); err != nil {
		return fmt.Errorf("root segments: %w", err)
	}
	if err := g.rounds(nt, b, it, m, cur, S, insertOut{}); err != nil {
		return err
	}
	nt.n = m
	return nil
}
