package btree

import (
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// deleteSorted removes the sorted unique keys in outK that sortDedupe
// kept, at most n (locate reads their number), from a non-empty tree and
// returns the new bookkeeping. Cost: locate's, one thread per old
// entry of the touched leaves (compaction) and per kept entry (write
// back), the unlinking kernels over the touched leaves, and the
// propagation as for insert.
func (g *gpuTree) deleteSorted(st treeState, n int) (treeState, error) {
	gr, err := g.locate(st, n, true)
	if err != nil {
		return st, err
	}
	m, G := gr.m, gr.G
	R := G + 2
	staged := max(gr.entries, g.maxStagedEntries(st, G, R))
	if err := g.reserveLevels(G, R, staged); err != nil {
		return st, err
	}
	if err := g.pool.Reserve(gpu.NeedOf[uint32]("head", G), gpu.NeedOf[uint32]("headof", G), gpu.NeedOf[uint32]("p0", G)); err != nil {
		return st, err
	}
	emptied := G - gr.pieces
	after := treeState{root: st.root, n: st.n - gr.flagged, leaves: st.leaves - emptied, freed: st.freed + emptied}
	if g.mightRebuild(after) {
		if err := g.reserveRebuild(after); err != nil {
			return st, err
		}
	}
	// From here on the tree changes; nothing allocates.
	order := uint32(g.order)
	lv := level{set: 0, G: G, R: gr.pieces, node: gpu.Take[uint32](g.pool, "node.0", G), oldMax: gpu.Take[uint64](g.pool, "oldmax.0", G),
		gp: gpu.Take[uint64](g.pool, "gp.0", G+1), chId: gpu.Take[uint32](g.pool, "chid.0", R), chMax: gpu.Take[uint64](g.pool, "chmax.0", R)}
	gc, gSum, packed := gpu.Take[uint64](g.pool, "gc.0", G+1), gpu.Take[uint64](g.pool, "gsum", m+1), gpu.Take[uint64](g.pool, "packed", m+1)
	ok, ov := gpu.Take[uint64](g.pool, "mk", staged), gpu.Take[uint64](g.pool, "mv", staged)
	if err := g.launch(g.k.stageOld, gr.oldTot, uint64(gr.oldTot), uint64(G), int32(1), gpu.Take[uint64](g.pool, bufOutK, m), gSum, packed, gc,
		lv.node, order, g.keys, g.slots, ok, ov); err != nil {
		return st, err
	}
	if err := g.launch(g.k.writeKept, gr.entries, uint64(gr.entries), uint64(G), gc, lv.node, ok, ov, order,
		g.keys, g.slots); err != nil {
		return st, err
	}
	if err := g.launch(g.k.deleteLeaves, G, uint64(G), gc, lv.gp, lv.node, ok, g.count, g.kind, lv.chId, lv.chMax); err != nil {
		return st, err
	}
	if emptied > 0 {
		head, headOf, p0 := gpu.Take[uint32](g.pool, "head", G), gpu.Take[uint32](g.pool, "headof", G), gpu.Take[uint32](g.pool, "p0", G)
		if err := g.launch(g.k.unlinkHeads, G, uint64(G), gc, lv.node, g.next, head); err != nil {
			return st, err
		}
		if err := prim.DevScanInclusive(g.pe, head, head, G); err != nil {
			return st, err
		}
		if err := g.launch(g.k.unlinkMark, G, uint64(G), gc, head, headOf); err != nil {
			return st, err
		}
		if err := g.launch(g.k.unlinkRead, G, uint64(G), gc, head, headOf, lv.node, g.prv, p0); err != nil {
			return st, err
		}
		if err := g.launch(g.k.unlinkWrite, G, uint64(G), gc, lv.node, p0, g.next, g.prv); err != nil {
			return st, err
		}
	}
	st.n, st.leaves, st.freed = after.n, after.leaves, after.freed
	return g.propagate(st, lv, true, R, nil)
}

// mightRebuild reports whether a delete whose leaf level leaves the
// bookkeeping after could end in a rebuild: the key fill test already
// fails, or the free node test would fail if every internal node were
// freed too. Cost: O(1).
func (g *gpuTree) mightRebuild(after treeState) bool {
	internal := g.nodes - after.leaves - after.freed
	return (after.leaves > 1 && 4*after.n < after.leaves*g.fill) || 2*(after.freed+max(internal, 0)) > g.nodes
}

// reserveRebuild reserves the scratch of rebuild for a tree of the given
// bookkeeping (at most that many keys and leaves).
func (g *gpuTree) reserveRebuild(st treeState) error {
	L := max(st.leaves, 1)
	return g.pool.Reserve(gpu.NeedOf[uint64]("rk", st.n), gpu.NeedOf[uint64]("rv", st.n), gpu.NeedOf[uint32]("list.0", L),
		gpu.NeedOf[uint32]("list.1", L), gpu.NeedOf[uint64]("cnt", L+1))
}

// rebuild builds the tree anew from its leaves' pairs in key order (the
// CPU engine's rebuild): the leaves are listed in key order level by
// level from the root (bt_node_counts, a scan, bt_gather of the child
// ids), their pairs gathered into the scratch rk, rv, then written by
// writeTree.
// Cost: O(n) on the device, a synchronization per level.
func (g *gpuTree) rebuild(st treeState) (treeState, error) {
	if err := g.reserveRebuild(st); err != nil {
		return st, err
	}
	order := uint32(g.order)
	L := max(st.leaves, 1)
	rk, rv := gpu.Take[uint64](g.pool, "rk", st.n), gpu.Take[uint64](g.pool, "rv", st.n)
	list := gpu.Take[uint32](g.pool, "list.0", L)
	if err := gpu.View[uint32](list, 0, 1).Fill32(g.s, st.root); err != nil {
		return st, err
	}
	cnt := gpu.Take[uint64](g.pool, "cnt", L+1)
	n := 1
	for h := 1; h <= g.height; h++ {
		if err := g.launch(g.k.nodeCounts, n+1, uint64(n), list, g.count, cnt); err != nil {
			return st, err
		}
		if err := prim.DevScanExclusive(g.pe, cnt, cnt, n+1); err != nil {
			return st, err
		}
		w, err := g.readWords([]*gpu.Buffer[uint64]{cnt}, []int{n})
		if err != nil {
			return st, err
		}
		total := int(w[0])
		if h == g.height {
			if total != st.n {
				return st, fmt.Errorf("rebuild: %d pairs in the leaves, want %d", total, st.n)
			}
			if err := g.launch(g.k.gather, total, uint64(total), uint64(n), list, cnt, order, g.keys, g.slots,
				int32(0), rk, rv, list); err != nil {
				return st, err
			}
			break
		}
		nextList := gpu.Take[uint32](g.pool, setName("list", h%2), L)
		if err := g.launch(g.k.gather, total, uint64(total), uint64(n), list, cnt, order, g.keys, g.slots,
			int32(1), rk, rv, nextList); err != nil {
			return st, err
		}
		list, n = nextList, total
	}
	b, err := g.writeTree(rk, rv, st.n)
	if err != nil {
		return st, err
	}
	return treeState{root: b.root, n: b.n, leaves: b.leaves}, nil
}

// deleteBatch is Delete on the GPU engine: upload, sort and dedupe the
// keys, deleteSorted, then rebuild when the tree is underfull (the CPU
// engine's rule); it returns the new bookkeeping and the phase times. On
// an error the returned state is st.
func (g *gpuTree) deleteBatch(st treeState, keys []uint64, fill int) (treeState, engine.Timings, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.start()
	if err := g.sortDedupe(keys, nil, false); err != nil {
		return st, engine.Timings{}, err
	}
	out, err := g.deleteSorted(st, len(keys))
	if err != nil {
		return st, engine.Timings{}, err
	}
	if underfullState(out, fill, g.nodes) {
		if out, err = g.rebuild(out); err != nil {
			return st, engine.Timings{}, err
		}
	}
	tm, err := g.finishTimes("delete", len(keys))
	return out, tm, err
}
