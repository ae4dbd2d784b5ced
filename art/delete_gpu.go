package art

import (
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// maxDepthHist bounds a node's depth (a node consumes at least one key
// byte, so no key of MaxKeyLen bytes passes more).
const maxDepthHist = MaxKeyLen + 1

// histPeek is how many depths of the histogram a delete reads back with
// its other totals (a deeper tree reads the rest after).
const histPeek = 64

// numLeafKinds is the number of leaf kinds (L8 to LV).
const numLeafKinds = kindLV - kindL8 + 1

// remove is store.remove on the device: upload, sort and dedupe; ad_find
// (one walk per key); the found keys counted; everything the rounds may
// need reserved (pool growth for the shrinking moves, bounded by the
// found keys and the live nodes of the next larger kind, and every scratch
// buffer); then ad_mark (LV leaves dead, root slots cleared, the depth
// histogram), the leaves' frees per kind, a sort of the entries by depth,
// and one node round per depth, deepest first, each given the entries the
// round below emitted. Cost: the sort, one walk per key, the rounds.
func (g *gpuEngine) remove(kb Keys) (int, error) {
	if long, n, err := longRemove(g, kb); long {
		return n, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waitFrees()
	b, order, n, err := g.uploadSorted(kb, nil, nil)
	if err != nil {
		return 0, err
	}
	t := g.t
	found, err := g.removeSorted(t, b, order, n)
	if err != nil {
		return 0, err
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	return found, g.finish("delete", kb.Len())
}

func (g *gpuEngine) removeSorted(t *devTree, b *devBatch, order *gpu.Buffer[uint32], n int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	k := g.k
	names32, names64 := []string{"d.slot1", "d.depth", "d.idx", "d.sel", "d.dv", "d.cnt"}, []string{"d.leaf", "d.par", "d.dk", "d.misc"}
	needs := append(needsOf[uint8](n, "d.found", "d.flag"), needsOf[uint32](n+1, names32...)...)
	needs = append(append(needs, needsOf[uint64](n+1, names64...)...), gpu.NeedOf[uint32]("d.hist", maxDepthHist+1),
		gpu.NeedOf[uint32]("d.lsel", numLeafKinds*n), gpu.NeedOf[uint32]("d.lcnt", numLeafKinds))
	if err := g.pool.Reserve(needs...); err != nil {
		return 0, fmt.Errorf("find: %w", err)
	}
	found, flag := gpu.Take[uint8](g.pool, "d.found", n), gpu.Take[uint8](g.pool, "d.flag", n)
	u32s := takeAll[uint32](g.pool, n+1, names32...)
	slot1, depth, idx, sel, dv, cnt := u32s[0], u32s[1], u32s[2], u32s[3], u32s[4], u32s[5]
	u64s := takeAll[uint64](g.pool, n+1, names64...)
	leaf, par, dk, misc := u64s[0], u64s[1], u64s[2], u64s[3]
	hist := gpu.Take[uint32](g.pool, "d.hist", maxDepthHist+1)
	lsel, lcnt := gpu.Take[uint32](g.pool, "d.lsel", numLeafKinds*n), gpu.Take[uint32](g.pool, "d.lcnt", numLeafKinds)
	if err := firstErr(g.setDesc(t, b),
		g.launch(k.dFind, n, g.descBuf, uint64(n), order, found, leaf, par, slot1, depth),
		g.launch(k.iota, n, uint64(n), idx),
		prim.DevSelect(g.pe, idx, found, sel, n, cnt)); err != nil {
		return 0, fmt.Errorf("find: %w", err)
	}
	c, err := g.readU32(cnt, 0, 1)
	if err != nil {
		return 0, err
	}
	F := int(c[0])
	if F == 0 {
		return 0, nil
	}
	// Reserve everything the rounds may take.
	var req [numKinds + 1]uint64
	live := func(k int) uint64 { return t.pools[k].hwm - t.pools[k].top }
	req[kindN4] = min(uint64(F), live(kindN16))
	req[kindN16] = min(uint64(F), live(kindN48))
	req[kindN48] = min(uint64(F), live(kindN256))
	if err := g.reserve(t, req, 0); err != nil {
		return 0, err
	}
	if err := g.pool.Reserve(append(append(roundNeeds(F), entryNeeds("d.entsA", F+1)...), entryNeeds("d.entsB", F+1)...)...); err != nil {
		return 0, err
	}
	ea, eb := g.takeEntries("d.entsA", F+1), g.takeEntries("d.entsB", F+1)
	// The depth sort first (before any change): it also grows prim's sort
	// scratch to what the rounds' sorts need.
	if err := firstErr(misc.FillBytes(g.s, 0), hist.FillBytes(g.s, 0), prim.DevScanExclusive(g.pe, misc, misc, n+1),
		g.launch(k.dDepthkeys, n, uint64(n), found, depth, uint32(maxDepthHist), dk, dv),
		prim.DevSortPairs(g.pe, dk, dv, n)); err != nil {
		return 0, fmt.Errorf("depth sort: %w", err)
	}
	// The tree changes from here on.
	if err := firstErr(g.setDesc(t, b),
		g.launch(k.dMark, n, g.descBuf, uint64(n), found, leaf, par, depth, misc, hist, misc.PtrAt(1))); err != nil {
		return 0, fmt.Errorf("mark: %w", err)
	}
	// The leaves' frees per kind, each selected into its own part of
	// lsel; their counts, the dead arena bytes, the deepest depth and the
	// histogram's first histPeek depths come back in one readback.
	lview := func(kk int) *gpu.Buffer[uint32] { return gpu.View[uint32](lsel, 4*(kk-kindL8)*n, n) }
	for kk := kindL8; kk <= kindLV; kk++ {
		if err := firstErr(g.launch(k.dLeafFlags, n, uint64(n), found, leaf, uint32(kk), flag, idx),
			prim.DevSelect(g.pe, idx, flag, lview(kk), n, gpu.View[uint32](lcnt, 4*(kk-kindL8), 1))); err != nil {
			return 0, fmt.Errorf("leaf frees: %w", err)
		}
	}
	rb, err := g.readSpans(span(lcnt, 0, numLeafKinds), span(misc, 0, 2), span(hist, 0, histPeek))
	if err != nil {
		return 0, err
	}
	lc, mv, hv := u32sOf(rb[0]), u64sOf(rb[1]), u32sOf(rb[2])
	for kk := kindL8; kk <= kindLV; kk++ {
		if err := g.pushPending(t, kk, lview(kk), int(lc[kk-kindL8])); err != nil {
			return 0, err
		}
	}
	t.arenaLive -= mv[0]
	maxd := int(uint32(mv[1]))
	if maxd >= histPeek {
		if hv, err = g.readU32(hist, 0, maxd+1); err != nil {
			return 0, err
		}
	}
	// The keys under nodes are in dv sorted by maxDepthHist - depth: the
	// deepest first.
	// Each round's entries go to ea: its depth's keys, then the entries the
	// round below emitted into eb.
	off, carried := 0, 0
	for d := maxd; d >= 0; d-- {
		cn := int(hv[d])
		if err := g.launch(k.dEntries, cn, uint64(cn), uint64(off), dv, par, slot1, ea.node, ea.code, ea.op, ea.link); err != nil {
			return 0, fmt.Errorf("round %d entries: %w", d, err)
		}
		if carried > 0 {
			if err := firstErr(ea.node.CopyFrom(g.s, cn, eb.node, 0, carried), ea.code.CopyFrom(g.s, cn, eb.code, 0, carried),
				ea.op.CopyFrom(g.s, cn, eb.op, 0, carried), ea.link.CopyFrom(g.s, cn, eb.link, 0, carried)); err != nil {
				return 0, err
			}
		}
		E := cn + carried
		off += cn
		emitted, err := g.nodeRound(t, roundIn{e: ea, n: E, sorted: E, out: eb})
		if err != nil {
			return 0, fmt.Errorf("round at depth %d: %w", d, err)
		}
		carried = emitted
	}
	if err := g.flushFrees(t); err != nil {
		return 0, err
	}
	t.n -= F
	return F, g.maybeCompactArena(t)
}

// maybeCompactArena is store.maybeCompactArena on the device: ac_sizes, an
// exclusive scan, a new arena of the live bytes, ac_move. Without the
// memory for the new arena it skips the compaction.
func (g *gpuEngine) maybeCompactArena(t *devTree) error {
	if !arenaNeedsCompaction(t.arenaLen, t.arenaLive) {
		return nil
	}
	p := &t.pools[kindLV]
	n := int(p.hwm)
	sz, err := gpu.Get[uint64](g.pool, "ac.sz", n+1)
	if err != nil {
		return err
	}
	na, err := gpu.Alloc[byte](g.dev, int(max(t.arenaLive, 1)))
	if err != nil {
		return nil // no memory for the compaction: it waits
	}
	if err := firstErr(g.setDesc(t, nil),
		g.launch(g.k.acSizes, n+1, g.descBuf, uint64(n), sz),
		prim.DevScanExclusive(g.pe, sz, sz, n+1),
		g.launch(g.k.acMove, n, g.descBuf, uint64(n), sz, na),
		g.s.Synchronize()); err != nil {
		_ = na.Free()
		return fmt.Errorf("arena compaction: %w", err)
	}
	_ = t.arena.Free()
	t.arena, t.arenaCap, t.arenaLen = na, max(t.arenaLive, 1), t.arenaLive
	return nil
}
