package btree

import (
	"errors"
	"fmt"
	"math"

	"warpkv/gpu"
	"warpkv/prim"
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

// launch queues f over n items (nothing for n <= 0) with the package's
// launch configuration (grid, kernelBlock).
func (g *gpuTree) launch(f *gpu.Function, n int, args ...any) error {
	if n <= 0 {
		return nil
	}
	return f.Launch(g.s, grid(n), gpu.D1(kernelBlock), 0, args...)
}

// readWords reads element i of each buffer (as one synchronization).
func (g *gpuTree) readWords(bufs []*gpu.Buffer[uint64], at []int) ([]uint64, error) {
	out := make([]uint64, len(bufs))
	var err error
	for i, b := range bufs {
		err = errors.Join(err, b.Read(g.s, at[i], out[i:i+1]))
	}
	return out, errors.Join(err, g.s.Synchronize())
}

// growCap makes the node arrays hold at least n nodes, keeping the
// contents of the nodes in use. On failure the arrays are unchanged.
// Cost: when growing, an allocation of the new capacity (n + n/8, whole
// segments) and a device copy of the nodes in use.
func (g *gpuTree) growCap(n int) error {
	if n <= g.capNodes {
		return nil
	}
	if n > maxNodes {
		return fmt.Errorf("%d nodes: at most %d", n, maxNodes)
	}
	c := (n + n/8 + segMask) &^ segMask
	m := g.order
	var (
		keys, slots              *gpu.Buffer[uint64]
		count, parent, next, prv *gpu.Buffer[uint32]
		kind                     *gpu.Buffer[uint8]
		err                      error
	)
	if keys, err = gpu.Alloc[uint64](g.dev, c*m); err == nil {
		if slots, err = gpu.Alloc[uint64](g.dev, c*m); err == nil {
			if count, err = gpu.Alloc[uint32](g.dev, c); err == nil {
				if parent, err = gpu.Alloc[uint32](g.dev, c); err == nil {
					if next, err = gpu.Alloc[uint32](g.dev, c); err == nil {
						if prv, err = gpu.Alloc[uint32](g.dev, c); err == nil {
							kind, err = gpu.Alloc[uint8](g.dev, c)
						}
					}
				}
			}
		}
	}
	if err == nil && g.nodes > 0 {
		u := g.nodes
		err = errors.Join(keys.CopyFrom(g.s, 0, g.keys, 0, u*m), slots.CopyFrom(g.s, 0, g.slots, 0, u*m),
			count.CopyFrom(g.s, 0, g.count, 0, u), parent.CopyFrom(g.s, 0, g.parent, 0, u),
			next.CopyFrom(g.s, 0, g.next, 0, u), prv.CopyFrom(g.s, 0, g.prv, 0, u),
			kind.CopyFrom(g.s, 0, g.kind, 0, u), g.s.Synchronize())
	}
	if err != nil {
		for _, b := range []interface{ Free() error }{keys, slots, count, parent, next, prv, kind} {
			_ = b.Free() // best effort (nil-safe): err says what failed
		}
		return fmt.Errorf("node arrays of %d nodes: %w", c, err)
	}
	nodes, height := g.nodes, g.height
	if err := g.freeNodes(); err != nil {
		return err
	}
	g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind = keys, slots, count, parent, next, prv, kind
	g.capNodes, g.nodes, g.height = c, nodes, height
	return nil
}

// allocNodes takes k new nodes after those in use, zeroed like the CPU
// engine's new segments, and returns the first id. The capacity must have
// been reserved (growCap). Cost: memsets of k nodes.
func (g *gpuTree) allocNodes(k int) (uint32, error) {
	first := g.nodes
	if first+k > g.capNodes {
		return 0, fmt.Errorf("btree: %d nodes past the reserved %d", first+k, g.capNodes)
	}
	if k == 0 {
		return uint32(first), nil
	}
	m := g.order
	if err := errors.Join(
		gpu.View[uint64](g.keys, 8*first*m, k*m).FillBytes(g.s, 0),
		gpu.View[uint64](g.slots, 8*first*m, k*m).FillBytes(g.s, 0),
		gpu.View[uint32](g.count, 4*first, k).FillBytes(g.s, 0),
		gpu.View[uint32](g.parent, 4*first, k).FillBytes(g.s, 0),
		gpu.View[uint32](g.next, 4*first, k).FillBytes(g.s, 0),
		gpu.View[uint32](g.prv, 4*first, k).FillBytes(g.s, 0),
		gpu.View[uint8](g.kind, first, k).FillBytes(g.s, 0)); err != nil {
		return 0, err
	}
	g.nodes += k
	return uint32(first), nil
}

// treeState is the host-side bookkeeping of the tree that an update
// changes: what the Tree holds besides the node arrays.
type treeState struct {
	root   uint32
	n      int
	leaves int
	freed  int
}

// uploadSortDedupe copies the batch to inK (and inV when values is not
// nil) and sorts it on the device; then keeps the last occurrence of each
// key in outK (and outV) and returns their number. With values, a large
// batch (overlapSort) is sorted as (key, batch position) pairs while the
// values are uploaded on the second stream, and the kept positions'
// values are gathered afterwards: the values' upload overlaps the sort,
// whose payload is 4 bytes instead of 8. The phase marks put the keys'
// upload in Upload and the rest (the sort, the overlapped upload of the
// values, the dedupe) in Sort. Cost: the transfers, a radix sort, a flag
// kernel, one or two selects (and a gather) and one synchronization.
func (g *gpuTree) uploadSortDedupe(keys, values []uint64) (int, error) {
	n := len(keys)
	k, err := gpu.Get[uint64](g.pool, bufInK, n)
	if err != nil {
		return 0, err
	}
	var v *gpu.Buffer[uint64]
	if values != nil {
		if v, err = gpu.Get[uint64](g.pool, bufInV, n); err != nil {
			return 0, err
		}
	}
	overlap := values != nil && overlapSort(n) && g.up.Staged()
	if overlap {
		if err := g.pool.Reserve(gpu.NeedOf[uint32]("sortidx", n), gpu.NeedOf[uint32]("selidx", n)); err != nil {
			return 0, err
		}
	}
	if err := gpu.UploadStaged(g.up, g.s, k, 0, keys); err != nil {
		return 0, err
	}
	if !overlap && values != nil {
		if err := gpu.UploadStaged(g.up, g.s, v, 0, values); err != nil {
			return 0, err
		}
	}
	g.clock.mark(g.s, markUploaded)
	if overlap {
		idx := gpu.Take[uint32](g.pool, "sortidx", n)
		if err := g.fork(); err != nil { // s2's upload into inV after s's earlier use of it
			return 0, err
		}
		if err := g.launch(g.k.iota, n, uint64(n), idx); err != nil {
			return 0, err
		}
		if err := prim.DevSortPairs(g.pe, k, idx, n); err != nil {
			return 0, err
		}
		if err := gpu.UploadStaged(g.up, g.s2, v, 0, values); err != nil {
			return 0, err
		}
		if err := g.joinBack(); err != nil {
			return 0, err
		}
		m, err := g.dedupeGather(n, idx, gpu.Take[uint32](g.pool, "selidx", n), v)
		if err != nil {
			return 0, err
		}
		g.clock.mark(g.s, markSorted)
		return m, nil
	}
	if values != nil {
		err = prim.DevSortPairs(g.pe, k, v, n)
	} else {
		err = prim.DevSortKeys(g.pe, k, n)
	}
	if err != nil {
		return 0, err
	}
	m, err := g.dedupe(n, values != nil)
	if err != nil {
		return 0, err
	}
	g.clock.mark(g.s, markSorted)
	return m, nil
}

// overlapSort reports whether a batch of n pairs is sorted with a position
// payload while its values upload (uploadSortDedupe): large enough to be
// staged, and positions fit in 32 bits.
func overlapSort(n int) bool { return n >= stageMin && uint64(n) <= math.MaxUint32 }

// dedupeGather is dedupe for a batch sorted as (key, position) pairs: the
// last of each run of equal keys in inK goes to outK, its position (from
// idx) to sel, and the value at that position of v to outV (bt_gather_
// selected reads the kept count on the device). It returns the number
// kept (one synchronization).
func (g *gpuTree) dedupeGather(n int, idx, sel *gpu.Buffer[uint32], v *gpu.Buffer[uint64]) (int, error) {
	flags, cnt, err := g.selectLastKeys(n)
	if err != nil {
		return 0, err
	}
	uv, err := gpu.Get[uint64](g.pool, bufOutV, n)
	if err != nil {
		return 0, err
	}
	if err := prim.DevSelect(g.pe, idx, flags, sel, n, gpu.View[uint32](cnt, 4, 1)); err != nil {
		return 0, err
	}
	if err := g.launch(g.k.gatherSel, n, uint64(n), gpu.View[uint32](cnt, 4, 1), sel, v, uv); err != nil {
		return 0, err
	}
	return g.keptCount(cnt)
}

// dedupe flags the last of each run of equal keys among the n sorted keys
// of inK and compacts them (and their values from inV, withValues) into
// outK (outV); it returns their number (one synchronization).
func (g *gpuTree) dedupe(n int, withValues bool) (int, error) {
	flags, cnt, err := g.selectLastKeys(n)
	if err != nil {
		return 0, err
	}
	if withValues {
		uv, err := gpu.Get[uint64](g.pool, bufOutV, n)
		if err != nil {
			return 0, err
		}
		if err := prim.DevSelect(g.pe, gpu.Take[uint64](g.pool, bufInV, n), flags, uv, n, gpu.View[uint32](cnt, 4, 1)); err != nil {
			return 0, err
		}
	}
	return g.keptCount(cnt)
}

// selectLastKeys flags the last of each run of equal keys among the n
// sorted keys of inK and compacts those keys into outK, their number into
// cnt[0]; the flags and cnt (two words; the second for the caller's own
// select) are returned for the caller's payload. No synchronization.
func (g *gpuTree) selectLastKeys(n int) (*gpu.Buffer[uint8], *gpu.Buffer[uint32], error) {
	flags, err := gpu.Get[uint8](g.pool, bufFlags, n)
	if err != nil {
		return nil, nil, err
	}
	uk, err := gpu.Get[uint64](g.pool, bufOutK, n)
	if err != nil {
		return nil, nil, err
	}
	cnt, err := gpu.Get[uint32](g.pool, bufCounters, 2)
	if err != nil {
		return nil, nil, err
	}
	if err := g.launch(g.k.lastFlags, n, gpu.Take[uint64](g.pool, bufInK, n), uint64(n), flags); err != nil {
		return nil, nil, err
	}
	if err := prim.DevSelect(g.pe, gpu.Take[uint64](g.pool, bufInK, n), flags, uk, n, gpu.View[uint32](cnt, 0, 1)); err != nil {
		return nil, nil, err
	}
	return flags, cnt, nil
}

// keptCount synchronizes and returns cnt[0], the number of keys kept.
func (g *gpuTree) keptCount(cnt *gpu.Buffer[uint32]) (int, error) {
	var c [1]uint32
	if err := errors.Join(cnt.Read(g.s, 0, c[:]), g.s.Synchronize()); err != nil {
		return 0, err
	}
	return int(c[0]), nil
}

// groups are the touched nodes of the leaf level after bt_locate, the
// reduction by leaf and the scans.
type groups struct {
	G       int // touched leaves
	flagged int // batch keys flagged (insert: new; delete: found)
	entries int // total new entries of the touched leaves (merged or kept)
	pieces  int // total pieces
	extra   int // total new nodes
	oldTot  int // total old entries of the touched leaves
}

// locate runs the leaf phases shared by insert and delete over the m
// sorted unique keys in outK: bt_locate, the reduction by leaf (prim
// reduce by key), bt_leaf_sizes and the scans; it reads the totals back.
// Nothing in the tree changes. Cost: one thread per key searching the
// tree, a reduce-by-key, four scans, two synchronizations.
func (g *gpuTree) locate(st treeState, m int, del bool) (groups, error) {
	var gr groups
	if err := g.pool.Reserve(gpu.NeedOf[uint32]("leafOf", m), gpu.NeedOf[uint32]("pos", m), gpu.NeedOf[uint64]("packed", m+1),
		gpu.NeedOf[uint32]("node.0", m), gpu.NeedOf[uint64]("gsum", m+1)); err != nil {
		return gr, err
	}
	leafOf, pos, packed := gpu.Take[uint32](g.pool, "leafOf", m), gpu.Take[uint32](g.pool, "pos", m), gpu.Take[uint64](g.pool, "packed", m+1)
	gLeaf, gSum := gpu.Take[uint32](g.pool, "node.0", m), gpu.Take[uint64](g.pool, "gsum", m+1)
	cnt, err := gpu.Get[uint32](g.pool, bufCounters, 2)
	if err != nil {
		return gr, err
	}
	order := uint32(g.order)
	if err := g.launch(g.k.locate, m, gpu.Take[uint64](g.pool, bufOutK, m), uint64(m), st.root, uint32(g.height), order, boolInt(del),
		g.keys, g.slots, g.count, leafOf, pos, packed); err != nil {
		return gr, err
	}
	if err := prim.DevReduceByKey(g.pe, leafOf, packed, gLeaf, gSum, m, gpu.View[uint32](cnt, 0, 1)); err != nil {
		return gr, err
	}
	var c [1]uint32
	if err := errors.Join(cnt.Read(g.s, 0, c[:]), g.s.Synchronize()); err != nil {
		return gr, err
	}
	G := int(c[0])
	gr.G = G
	if err := g.pool.Reserve(gpu.NeedOf[uint64]("gc.0", G+1), gpu.NeedOf[uint64]("gp.0", G+1), gpu.NeedOf[uint64]("oldmax.0", G),
		gpu.NeedOf[uint32]("oldnext", G)); err != nil {
		return gr, err
	}
	gc, gp := gpu.Take[uint64](g.pool, "gc.0", G+1), gpu.Take[uint64](g.pool, "gp.0", G+1)
	if err := g.launch(g.k.leafSizes, G+1, uint64(G), gLeaf, gSum, order, uint32(g.fill), boolInt(del),
		g.keys, g.count, g.next, gc, gp, gpu.Take[uint64](g.pool, "oldmax.0", G), gpu.Take[uint32](g.pool, "oldnext", G)); err != nil {
		return gr, err
	}
	for _, x := range []struct {
		b *gpu.Buffer[uint64]
		n int
	}{{packed, m + 1}, {gSum, G + 1}, {gc, G + 1}, {gp, G + 1}} {
		if err := prim.DevScanExclusive(g.pe, x.b, x.b, x.n); err != nil {
			return gr, err
		}
	}
	w, err := g.readWords([]*gpu.Buffer[uint64]{gSum, gc, gp}, []int{G, G, G})
	if err != nil {
		return gr, err
	}
	gr.flagged = int(uint32(w[0]))
	gr.entries = int(w[1])
	gr.pieces, gr.extra = int(w[2]>>32), int(uint32(w[2]))
	if del {
		gr.oldTot = gr.entries + gr.flagged
	} else {
		gr.oldTot = gr.entries - gr.flagged
	}
	return gr, nil
}

// boolInt is 1 for true, 0 for false (a kernel's int flag).
func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// level is one level's changes on the device, the GPU form of changes:
// node[0:G] the touched nodes in key order, oldMax their parents' keys for
// them, gp the scanned packed pieces (hi: first replacement, lo: first new
// node offset; element G the totals), chId, chMax the R replacements.
type level struct {
	set    int // scratch set (0 or 1) holding the level's buffers
	G, R   int
	node   *gpu.Buffer[uint32]
	oldMax *gpu.Buffer[uint64]
	gp     *gpu.Buffer[uint64]
	chId   *gpu.Buffer[uint32]
	chMax  *gpu.Buffer[uint64]
}

// setName names buffer name of scratch set s.
func setName(name string, s int) string { return fmt.Sprintf("%s.%d", name, s) }

// propagateNeeds lists the scratch of the propagation of a batch whose
// leaf level has G groups, R replacements and E extra nodes, with at most
// maxStaged staged entries per level.
func propagateNeeds(G, R, maxStaged int) []gpu.Need {
	var ns []gpu.Need
	for s := range 2 {
		ns = append(ns, gpu.NeedOf[uint32](setName("node", s), G), gpu.NeedOf[uint64](setName("oldmax", s), G),
			gpu.NeedOf[uint64](setName("gc", s), G+1), gpu.NeedOf[uint64](setName("gp", s), G+1),
			gpu.NeedOf[uint32](setName("chid", s), R), gpu.NeedOf[uint64](setName("chmax", s), R))
	}
	return append(ns, gpu.NeedOf[uint32]("par", G), gpu.NeedOf[uint64]("pk", G), gpu.NeedOf[uint32]("slot", G),
		gpu.NeedOf[uint64]("psum", G+1), gpu.NeedOf[uint32]("up", G), gpu.NeedOf[uint64]("mk", maxStaged), gpu.NeedOf[uint64]("mv", maxStaged))
}

// maxStagedEntries bounds the staged entries of one internal level: at
// most min(G, live internal nodes) parents of at most order entries each,
// plus the replacements.
func (g *gpuTree) maxStagedEntries(st treeState, G, R int) int {
	internal := g.nodes - st.leaves - st.freed
	return min(G, max(internal, 0))*g.order + R
}

// insert applies the m sorted unique pairs in outK, outV to a non-empty
// tree and returns the new bookkeeping. Cost: locate's, one thread per
// batch key and per old entry of the touched leaves (merge), one per
// merged entry (write), and per level one thread per changed child,
// replacement and entry of the touched parents.
func (g *gpuTree) insert(st treeState, m int) (treeState, error) {
	gr, err := g.locate(st, m, false)
	if err != nil {
		return st, err
	}
	G := gr.G
	// Reserve: node capacity for the leaves' extra nodes and a bound on
	// the upper levels' (each level adds at most as many as the one below,
	// a new root level at most the root's pieces), and every buffer.
	bound := g.nodes + gr.extra*(g.height+2) + 2
	R := gr.pieces + gr.extra + 2
	staged := max(gr.entries, g.maxStagedEntries(st, G, R))
	if err := g.pool.Reserve(propagateNeeds(G, R, staged)...); err != nil {
		return st, err
	}
	if err := g.growCap(bound); err != nil {
		return st, err
	}
	// From here on the tree changes; nothing allocates.
	first, err := g.allocNodes(gr.extra)
	if err != nil {
		return st, err
	}
	order := uint32(g.order)
	lv := level{set: 0, G: G, R: gr.pieces, node: gpu.Take[uint32](g.pool, "node.0", G), oldMax: gpu.Take[uint64](g.pool, "oldmax.0", G),
		gp: gpu.Take[uint64](g.pool, "gp.0", G+1), chId: gpu.Take[uint32](g.pool, "chid.0", R), chMax: gpu.Take[uint64](g.pool, "chmax.0", R)}
	gc, gSum, packed, pos := gpu.Take[uint64](g.pool, "gc.0", G+1), gpu.Take[uint64](g.pool, "gsum", m+1), gpu.Take[uint64](g.pool, "packed", m+1), gpu.Take[uint32](g.pool, "pos", m)
	mk, mv := gpu.Take[uint64](g.pool, "mk", staged), gpu.Take[uint64](g.pool, "mv", staged)
	if err := g.launch(g.k.mergeNew, m, gpu.Take[uint64](g.pool, bufOutK, m), gpu.Take[uint64](g.pool, bufOutV, m), uint64(m), uint64(G), gSum, packed, pos, gc, mk, mv); err != nil {
		return st, err
	}
	if err := g.launch(g.k.stageOld, gr.oldTot, uint64(gr.oldTot), uint64(G), int32(0), gpu.Take[uint64](g.pool, bufOutK, m), gSum, packed, gc,
		lv.node, order, g.keys, g.slots, mk, mv); err != nil {
		return st, err
	}
	if err := g.launch(g.k.writeLeaves, gr.entries, uint64(gr.entries), uint64(G), gc, lv.gp, lv.node,
		gpu.Take[uint32](g.pool, "oldnext", G), mk, mv, first, order, g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind,
		lv.chId, lv.chMax); err != nil {
		return st, err
	}
	st.n += gr.flagged
	st.leaves += gr.pieces - G
	return g.propagate(st, lv)
}

// delete removes the m sorted unique keys in outK from a non-empty tree
// and returns the new bookkeeping. Cost: locate's, one thread per old
// entry of the touched leaves (compaction) and per kept entry (write
// back), the unlinking kernels over the touched leaves, and the
// propagation as for insert.
func (g *gpuTree) delete(st treeState, m int) (treeState, error) {
	gr, err := g.locate(st, m, true)
	if err != nil {
		return st, err
	}
	G := gr.G
	R := G + 2
	staged := max(gr.entries, g.maxStagedEntries(st, G, R))
	ns := append(propagateNeeds(G, R, staged), gpu.NeedOf[uint32]("head", G), gpu.NeedOf[uint32]("headof", G), gpu.NeedOf[uint32]("p0", G))
	if err := g.pool.Reserve(ns...); err != nil {
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
	return g.propagate(st, lv)
}

// propagate applies a level's changes to the levels above up to the root
// (the CPU engine's propagate without the filtering of unchanged nodes:
// an unchanged child rewrites its parent with the same words, and adds no
// node), then installs the root's replacements and shortens a root with
// one child. Cost: per level, the kernels of applyParents and a
// synchronization.
func (g *gpuTree) propagate(st treeState, lv level) (treeState, error) {
	for l := 1; l < g.height; l++ {
		var err error
		var freed int
		if lv, freed, err = g.applyParents(lv); err != nil {
			return st, err
		}
		st.freed += freed
	}
	st, err := g.replaceRoot(st, lv)
	if err != nil {
		return st, err
	}
	return g.collapseRoot(st)
}

// applyParents rewrites the parents of a level's touched nodes (the CPU
// engine's applyParents) and returns their changes and the number of
// parents freed. Cost: bt_parent_of over the children, a reduce-by-key,
// bt_parent_sizes over the parents, three scans, one synchronization, then
// the staging and writing kernels over the replacements and entries.
func (g *gpuTree) applyParents(ch level) (level, int, error) {
	G := ch.G
	order := uint32(g.order)
	par, pk, slot := gpu.Take[uint32](g.pool, "par", G), gpu.Take[uint64](g.pool, "pk", G), gpu.Take[uint32](g.pool, "slot", G)
	ps := 1 - ch.set
	pNode, pSum := gpu.Take[uint32](g.pool, setName("node", ps), G), gpu.Take[uint64](g.pool, "psum", G+1)
	cnt, err := gpu.Get[uint32](g.pool, bufCounters, 2)
	if err != nil {
		return level{}, 0, err
	}
	if err := g.launch(g.k.parentOf, G, uint64(G), ch.node, ch.oldMax, ch.gp, order, g.keys, g.count, g.parent,
		par, pk, slot); err != nil {
		return level{}, 0, err
	}
	if err := prim.DevReduceByKey(g.pe, par, pk, pNode, pSum, G, gpu.View[uint32](cnt, 0, 1)); err != nil {
		return level{}, 0, err
	}
	var c [1]uint32
	if err := errors.Join(cnt.Read(g.s, 0, c[:]), g.s.Synchronize()); err != nil {
		return level{}, 0, err
	}
	PG := int(c[0])
	gc, gp := gpu.Take[uint64](g.pool, setName("gc", ps), G+1), gpu.Take[uint64](g.pool, setName("gp", ps), G+1)
	oldMax, up := gpu.Take[uint64](g.pool, setName("oldmax", ps), G), gpu.Take[uint32](g.pool, "up", G)
	if err := g.launch(g.k.parentSizes, PG+1, uint64(PG), pNode, pSum, order, uint32(g.fill), g.keys, g.count,
		g.parent, g.kind, gc, gp, oldMax, up); err != nil {
		return level{}, 0, err
	}
	for _, b := range []*gpu.Buffer[uint64]{pSum, gc, gp} {
		if err := prim.DevScanExclusive(g.pe, b, b, PG+1); err != nil {
			return level{}, 0, err
		}
	}
	w, err := g.readWords([]*gpu.Buffer[uint64]{gc, gp}, []int{PG, PG})
	if err != nil {
		return level{}, 0, err
	}
	entries, freed := int(w[0]&(1<<freedShift-1)), int(w[0]>>freedShift)
	pieces, extra := int(w[1]>>32), int(uint32(w[1]))
	first, err := g.allocNodes(extra)
	if err != nil {
		return level{}, 0, err
	}
	sk, sv := gpu.Take[uint64](g.pool, "mk", entries), gpu.Take[uint64](g.pool, "mv", entries)
	if err := g.launch(g.k.stageRepl, ch.R, uint64(ch.R), uint64(G), ch.gp, ch.chId, ch.chMax, slot, uint64(PG),
		pSum, gc, sk, sv); err != nil {
		return level{}, 0, err
	}
	oldTot := entries - ch.R + G
	if err := g.launch(g.k.stageKeep, oldTot, uint64(oldTot), uint64(PG), pSum, gc, pNode, slot, ch.gp, order,
		g.keys, g.slots, sk, sv); err != nil {
		return level{}, 0, err
	}
	out := level{set: ps, G: PG, R: pieces, node: pNode, oldMax: oldMax, gp: gp,
		chId: gpu.Take[uint32](g.pool, setName("chid", ps), pieces), chMax: gpu.Take[uint64](g.pool, setName("chmax", ps), pieces)}
	if err := g.launch(g.k.writeInternal, entries, uint64(entries), uint64(PG), gc, gp, pNode, up, sk, sv, first,
		order, g.keys, g.slots, g.count, g.parent, g.kind, out.chId, out.chMax); err != nil {
		return level{}, 0, err
	}
	return out, freed, nil
}

// replaceRoot installs the replacements of the root (the level with the
// root as its one touched node): none empties the tree, one is the root
// itself, several get new internal levels above them (buildUpper's closed
// form: bt_level_list, then bt_level). Cost: a kernel per new level.
func (g *gpuTree) replaceRoot(st treeState, root level) (treeState, error) {
	switch p := root.R; p {
	case 0:
		g.nodes, g.height = 0, 0
		return treeState{root: nilNode}, nil
	case 1:
		return st, nil // piece 0 is the root itself, parent nil already
	default:
		order := uint32(g.order)
		n := p
		q := (n + g.fill - 1) / g.fill
		first, err := g.allocNodes(q)
		if err != nil {
			return st, err
		}
		if err := g.launch(g.k.levelList, n, uint64(n), uint64(q), root.chId, root.chMax, first, order,
			g.keys, g.slots, g.count, g.parent, g.kind); err != nil {
			return st, err
		}
		g.height++
		for n = q; n > 1; n = q {
			q = (n + g.fill - 1) / g.fill
			childFirst := first
			if first, err = g.allocNodes(q); err != nil {
				return st, err
			}
			if err := g.launch(g.k.level, n, uint64(n), uint64(q), childFirst, first, order,
				g.keys, g.slots, g.count, g.parent, g.kind); err != nil {
				return st, err
			}
			g.height++
		}
		st.root = first
		return st, nil
	}
}

// collapseRoot replaces an internal root with one child by the child, as
// long as there is one (the CPU engine's collapseRoot). Cost: a read of
// the root's kind, count and first slot per level, and a few memsets.
func (g *gpuTree) collapseRoot(st treeState) (treeState, error) {
	for st.root != nilNode && g.height > 1 {
		var cnt [1]uint32
		var child [1]uint64
		if err := errors.Join(g.count.Read(g.s, int(st.root), cnt[:]),
			g.slots.Read(g.s, int(st.root)*g.order, child[:]), g.s.Synchronize()); err != nil {
			return st, err
		}
		if cnt[0] != 1 {
			break
		}
		c := uint32(child[0])
		if err := errors.Join(gpu.View[uint32](g.count, 4*int(st.root), 1).FillBytes(g.s, 0),
			gpu.View[uint8](g.kind, int(st.root), 1).FillBytes(g.s, 0),
			gpu.View[uint32](g.parent, 4*int(c), 1).Fill32(g.s, nilNode)); err != nil {
			return st, err
		}
		st.freed++
		st.root = c
		g.height--
	}
	return st, nil
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

// insertBatch is Insert on the GPU engine: upload, sort and dedupe, then
// writeTree into an empty tree or insert; bt gets the phase times. On an
// error the returned state is st (out of memory: the tree is unchanged).
func (g *gpuTree) insertBatch(st treeState, keys, values []uint64, bt *BatchTimes) (treeState, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.clock.reset()
	g.clock.mark(g.s, markStart)
	m, err := g.uploadSortDedupe(keys, values)
	if err != nil {
		return st, err
	}
	out := st
	if st.root == nilNode {
		b, err := g.writeTree(gpu.Take[uint64](g.pool, bufOutK, m), gpu.Take[uint64](g.pool, bufOutV, m), m)
		if err != nil {
			return st, err
		}
		out = treeState{root: b.root, n: b.n, leaves: b.leaves}
	} else if out, err = g.insert(st, m); err != nil {
		return st, err
	}
	return out, g.finishTimes(bt)
}

// deleteBatch is Delete on the GPU engine: upload, sort and dedupe the
// keys, delete, then rebuild when the tree is underfull (the CPU engine's
// rule); bt gets the phase times. On an error the returned state is st.
func (g *gpuTree) deleteBatch(st treeState, keys []uint64, fill int, bt *BatchTimes) (treeState, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.clock.reset()
	g.clock.mark(g.s, markStart)
	m, err := g.uploadSortDedupe(keys, nil)
	if err != nil {
		return st, err
	}
	out, err := g.delete(st, m)
	if err != nil {
		return st, err
	}
	if underfullState(out, fill, g.nodes) {
		if out, err = g.rebuild(out); err != nil {
			return st, err
		}
	}
	return out, g.finishTimes(bt)
}
