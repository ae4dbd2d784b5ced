package btree

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Batch insert and delete on the GPU engine. Every phase is a kernel of one
// thread per item (key, touched node, entry) or a prim primitive on the
// tree's stream; the node arrays never leave the device. Between phases
// the host reads a few totals (groups, pieces, entries) to size the next
// launches and the node allocation. The algorithm, the piece layout, the
// node ids and the leaf chain follow the CPU engine's insert.go,
// propagate.go and delete.go exactly, so the node arrays stay equal word
// for word. All memory a batch may need (node capacity for a safe upper
// bound of the new nodes, every scratch buffer) is reserved before the
// first write to the tree, so running out of device memory leaves the tree
// as it was.

// insertSorted applies the sorted unique pairs in outK, outV that
// sortDedupe kept, at most n (locate reads their number), to a non-empty
// tree and returns the new bookkeeping. When the batch's values are still
// uploading (uploadSortDedupe's overlap) and the warp merge runs: from Go
// slices whose host copy is still running when the leaves are reserved,
// the leaves and the upper levels are written without them, and the
// values are scattered into their leaf slots last (scatterValues), so
// that the values' host copy overlaps the merge and the parents; from
// pinned memory, or from Go slices whose last chunk is already queued,
// the merge reads them from the upload by their kept positions (no
// gather or scatter kernel). Cost: locate's,
// mergeLeaves', and per level one thread per changed child, replacement
// and entry of the touched parents.
func (g *gpuTree) insertSorted(st treeState, n int) (treeState, error) {
	gr, err := g.locate(st, n, false)
	if err != nil {
		return st, err
	}
	m, G := gr.m, gr.G
	// Reserve: node capacity for the leaves' extra nodes and a bound on
	// the upper levels' (each level adds at most as many as the one below,
	// a new root level at most the root's pieces), and every buffer.
	bound := g.nodes + gr.extra*(g.height+2) + 2
	R := gr.pieces + gr.extra + 2
	staged := max(gr.entries, g.maxStagedEntries(st, G, R))
	if err := g.reserveLevels(G, R, staged); err != nil {
		return st, err
	}
	if err := g.growCap(bound); err != nil {
		return st, err
	}
	g.step("reserve")
	vals, late, err := g.mergeValuesFor(gr, m)
	if err != nil {
		return st, err
	}
	// From here on the tree changes; nothing allocates.
	first, err := g.allocNodes(gr.extra)
	if err != nil {
		return st, err
	}
	lv := level{set: 0, G: G, R: gr.pieces, node: gpu.Take[uint32](g.pool, "node.0", G), oldMax: gpu.Take[uint64](g.pool, "oldmax.0", G),
		gp: gpu.Take[uint64](g.pool, "gp.0", G+1), chId: gpu.Take[uint32](g.pool, "chid.0", R), chMax: gpu.Take[uint64](g.pool, "chmax.0", R)}
	if err := g.mergeLeaves(gr, m, staged, first, lv, vals); err != nil {
		return st, err
	}
	st.n += gr.flagged
	st.leaves += gr.pieces - G
	var tail func() error
	if late {
		tail = g.scatterValues
	}
	return g.propagate(st, lv, false, R, tail)
}

// mergeValues says where bt_merge_leaves_E takes the batch keys' values:
// v[i], v[sel[i]] (sel a buffer), or none, their slots' word indices going
// to at (a buffer) for scatterValues. sel and at are gpu.DevicePtr(0)
// when unused.
type mergeValues struct {
	v       *gpu.Buffer[uint64]
	sel, at any
}

// mergeValuesFor returns where the merge of gr (m batch keys) takes the
// values, and late when they are scattered after the upper levels: with
// no values' upload pending or no warp merge, outV once awaitValues has
// gathered them; from Go slices still being copied (or with lateValues
// set), late; from pinned memory or Go slices whose copy has queued its
// last chunk, the upload by the kept positions once it has arrived. Cost:
// as awaitValues, or a stream wait, or nothing.
func (g *gpuTree) mergeValuesFor(gr groups, m int) (mergeValues, bool, error) {
	outV := gpu.Take[uint64](g.pool, bufOutV, m)
	none := gpu.DevicePtr(0)
	u := g.values
	switch {
	case u == nil || !g.warpMerge(gr):
		return mergeValues{outV, none, none}, false, g.awaitValues()
	case !u.pinned && (g.lateValues || !u.queued()):
		return mergeValues{outV, none, outV}, true, nil
	}
	if _, err := g.valuesArrived(); err != nil {
		return mergeValues{}, false, err
	}
	g.step(stepValuesWait)
	return mergeValues{u.v, u.sel, none}, false, nil
}

// mergeLeaves writes the touched leaves of gr merged with the m batch
// pairs in outK and vals (pieces from first on; lv the leaf level's
// changes, filled in): with bt_merge_leaves_E (mergeKernel) when warpMerge
// says so, else with
// bt_merge_new and bt_stage_old (staging the merged entries in mk, mv of
// staged elements) and bt_write_leaves. Cost: one pass over the touched
// leaves and the batch, or three.
func (g *gpuTree) mergeLeaves(gr groups, m, staged int, first uint32, lv level, vals mergeValues) error {
	G := gr.G
	order := uint32(g.order)
	outK, outV := gpu.Take[uint64](g.pool, bufOutK, m), gpu.Take[uint64](g.pool, bufOutV, m)
	gc, gSum, packed, pos := gpu.Take[uint64](g.pool, "gc.0", G+1), gpu.Take[uint64](g.pool, "gsum", m+1), gpu.Take[uint64](g.pool, "packed", m+1), gpu.Take[uint32](g.pool, "pos", m)
	oldNext := gpu.Take[uint32](g.pool, "oldnext", G)
	if g.warpMerge(gr) {
		if err := g.mergeKernel().Launch(g.s, warpGrid(G), gpu.D1(kernelBlock), 0, uint64(G), outK, vals.v, gSum, packed, pos,
			gc, lv.gp, lv.node, oldNext, first, order, g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind,
			lv.chId, lv.chMax, vals.sel, vals.at); err != nil {
			return err
		}
		g.step(stepWarpMerge)
		return nil
	}
	mk, mv := gpu.Take[uint64](g.pool, "mk", staged), gpu.Take[uint64](g.pool, "mv", staged)
	if err := g.launch(g.k.mergeNew, m, outK, outV, uint64(m), uint64(G), gSum, packed, pos, gc, mk, mv); err != nil {
		return err
	}
	if err := g.launch(g.k.stageOld, gr.oldTot, uint64(gr.oldTot), uint64(G), int32(0), outK, gSum, packed, gc,
		lv.node, order, g.keys, g.slots, mk, mv); err != nil {
		return err
	}
	if err := g.launch(g.k.writeLeaves, gr.entries, uint64(gr.entries), uint64(G), gc, lv.gp, lv.node,
		oldNext, mk, mv, first, order, g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind,
		lv.chId, lv.chMax); err != nil {
		return err
	}
	g.step("leaves: merge, stage, write")
	return nil
}

// Trace steps that tests look for: the leaves' merge in one pass, the
// values scattered into their leaves after it (scatterValues), and the
// wait for pinned values that the merge reads (mergeValuesFor).
const (
	stepWarpMerge  = "leaves: merge in one pass"
	stepScatter    = "values: wait, scatter"
	stepValuesWait = "values: wait" // pinned values read by the merge
)

// Limits of bt_merge_leaves_E, the leaves' merge in one pass (warpMerge).
const (
	mergeWarpMaxOrder = warpLanes * 8 // a lane holds at most 8 old entries (MERGE_LANE_ENTRIES in insert.cu)
	mergeWarpMaxKeys  = 2048          // batch keys of one leaf: a warp writes them 32 at a time
)

// mergeKernel returns the instantiation of the warp merge for the tree's
// order: bt_merge_leaves_E with the fewest entries per lane E (1, 2, 4 or
// 8) that hold a leaf (32 * E >= order), so that a small order keeps few
// registers a lane and more warps in flight. The order must be at most
// mergeWarpMaxOrder (warpMerge checks it). Cost: O(1).
func (g *gpuTree) mergeKernel() *gpu.Function {
	i := 0
	for warpLanes<<i < g.order {
		i++
	}
	return g.k.mergeLeaves[i]
}

// warpMerge reports whether the touched leaves of gr are merged by
// bt_merge_leaves_E (a warp per leaf, no staging) rather than by the three
// kernels over flattened entries (bt_merge_new, bt_stage_old,
// bt_write_leaves): when a leaf's old entries fit in a warp's registers
// and no leaf has so many batch keys that its warp would hold the rest
// back (a skewed batch), unless a benchmark turned it off (flatMerge).
func (g *gpuTree) warpMerge(gr groups) bool {
	return !g.flatMerge && g.order <= mergeWarpMaxOrder && gr.maxKeys <= mergeWarpMaxKeys
}

// insertBatch is Insert on the GPU engine: upload, sort and dedupe, then
// writeTree into an empty tree (after reading the number of keys kept) or
// insertSorted (which reads it with the located leaves' totals); it returns the new
// bookkeeping and the phase times. With pinned, keys and values are in
// pinned memory (InsertStaged) and reach the device by DMA. On an error
// the returned state is st (out of memory: the tree is unchanged).
func (g *gpuTree) insertBatch(st treeState, keys, values []uint64, pinned bool) (treeState, engine.Timings, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.settleValues()
	g.start()
	if err := g.sortDedupe(keys, values, pinned); err != nil {
		return st, engine.Timings{}, err
	}
	out := st
	if st.root == nilNode {
		m, err := g.keptKeys()
		if err != nil {
			return st, engine.Timings{}, err
		}
		if err := g.awaitValues(); err != nil {
			return st, engine.Timings{}, err
		}
		b, err := g.writeTree(gpu.Take[uint64](g.pool, bufOutK, m), gpu.Take[uint64](g.pool, bufOutV, m), m)
		if err != nil {
			return st, engine.Timings{}, err
		}
		out = treeState{root: b.root, n: b.n, leaves: b.leaves}
	} else {
		var err error
		if out, err = g.insertSorted(st, len(keys)); err != nil {
			return st, engine.Timings{}, err
		}
	}
	tm, err := g.finishTimes("insert", len(keys))
	return out, tm, err
}
