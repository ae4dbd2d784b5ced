package btree

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// level is one level's changes on the device, the GPU form of changes:
// node[0:G] the touched nodes in key order, oldMax their parents' keys for
// them, gp the scanned packed pieces (hi: first replacement, lo: first new
// node offset; the totals at G and past it), chId, chMax the R
// replacements. At the leaf level G and R are the counts; at a parent
// level they are bounds known to the host, and the counts are in the
// level's header hdr on the device (HDR_WORDS words, btree.cuh), which
// the kernels read, so that the host reads nothing between levels.
type level struct {
	set    int // scratch set (0 or 1) holding the level's buffers
	G, R   int
	node   *gpu.Buffer[uint32]
	oldMax *gpu.Buffer[uint64]
	gp     *gpu.Buffer[uint64]
	chId   *gpu.Buffer[uint32]
	chMax  *gpu.Buffer[uint64]
	hdr    *gpu.Buffer[uint64]
}

// Words of the level headers and of the control block (HDR_WORDS,
// CTL_WORDS and the word indices in btree.cuh).
const (
	hdrWords  = 8
	hdrR      = 1 // HDR_R: the level's replacements
	ctlWords  = 8
	ctlNodes  = 0        // CTL_NODES: nodes in use after the levels
	ctlFreed  = 1        // CTL_FREED: parents freed
	ctlOver   = 2        // CTL_OVER: a level overflowed its reservations
	bufLevels = "levels" // the control block, then one header per level
)

// levelsWords returns the words of bufLevels for a tree of the given
// height: the control block and a header per level.
func levelsWords(height int) int { return ctlWords + hdrWords*max(height, 1) }

// setName names buffer name of scratch set s.
func setName(name string, s int) string { return fmt.Sprintf("%s.%d", name, s) }

// propagateNeeds lists the scratch of the propagation of a batch whose
// leaf level has G groups and at most R replacements, with at most
// maxStaged staged entries per level, in a tree of the given height.
func propagateNeeds(G, R, maxStaged, height int) []gpu.Need {
	var ns []gpu.Need
	for s := range 2 {
		ns = append(ns, gpu.NeedOf[uint32](setName("node", s), G), gpu.NeedOf[uint64](setName("oldmax", s), G),
			gpu.NeedOf[uint64](setName("gc", s), G+1), gpu.NeedOf[uint64](setName("gp", s), G+1),
			gpu.NeedOf[uint32](setName("chid", s), R), gpu.NeedOf[uint64](setName("chmax", s), R))
	}
	return append(ns, gpu.NeedOf[uint32]("par", G), gpu.NeedOf[uint64]("pk", G), gpu.NeedOf[uint32]("slot", G),
		gpu.NeedOf[uint64]("psum", G+1), gpu.NeedOf[uint32]("up", G), gpu.NeedOf[uint64]("mk", maxStaged), gpu.NeedOf[uint64]("mv", maxStaged),
		gpu.NeedOf[uint64](bufLevels, levelsWords(height)))
}

// maxStagedEntries bounds the staged entries of one internal level: at
// most min(G, live internal nodes) parents of at most order entries each,
// plus the replacements.
func (g *gpuTree) maxStagedEntries(st treeState, G, R int) int {
	internal := g.nodes - st.leaves - st.freed
	return min(G, max(internal, 0))*g.order + R
}

// propagate applies a level's changes to the levels above up to the root
// (the CPU engine's propagate without the filtering of unchanged nodes:
// an unchanged child rewrites its parent with the same words, and adds no
// node), then installs the root's replacements and, when the batch may
// have shrunk a node (shrinks: deletes), shortens a root with one child.
// The leaf level lv holds its counts (G, R); the parent levels run with
// their counts on the device (level headers, applyParents), and their
// results (the root level's replacements, the nodes in use, the parents
// freed) come back by one copy into pinned memory, read after the one
// synchronization that ends the levels. tail (nil: none) is queued after
// the levels, before that synchronization, so that it runs without a host
// round trip in between (insert: the values' scatter). rcap is the size
// of the levels' replacement buffers (chid, chmax); reserveLevels must
// have run. An insert never shrinks: it only adds entries, and an
// internal root (of Build, of replaceRoot, or after collapseRoot) has two
// children or more, so it skips collapseRoot's readback. Cost: per level,
// the kernels of applyParents; one synchronization.
func (g *gpuTree) propagate(st treeState, lv level, shrinks bool, rcap int, tail func() error) (treeState, error) {
	var host []uint64
	if g.height > 1 {
		var err error
		if host, lv, err = g.parentLevels(st, lv, rcap); err != nil {
			return st, err
		}
	}
	if tail != nil {
		if err := tail(); err != nil {
			return st, err
		}
	}
	if host != nil {
		g.trace.Synced()
		if err := g.s.Synchronize(); err != nil {
			return st, err
		}
		g.step("readback: levels")
		if host[ctlOver] != 0 {
			return st, fmt.Errorf("btree: parent levels: more nodes or replacements than the %d nodes and %d replacements reserved", g.capNodes, rcap)
		}
		g.nodes = int(host[ctlNodes])
		st.freed += int(host[ctlFreed])
		lv.R = int(host[ctlWords])
	}
	st, err := g.replaceRoot(st, lv)
	if err != nil {
		return st, err
	}
	g.step("root")
	if !shrinks {
		return st, nil
	}
	st, err = g.collapseRoot(st)
	g.step("collapse root")
	return st, err
}

// reserveLevels reserves the scratch of propagate (propagateNeeds) and
// the pinned words its levels' results come back in. Cost: as
// Pool.Reserve, and a cuMemHostAlloc the first time.
func (g *gpuTree) reserveLevels(G, R, maxStaged int) error {
	if err := g.pool.Reserve(propagateNeeds(G, R, maxStaged, g.height)...); err != nil {
		return err
	}
	_, err := gpu.Host[uint64](g.pool, bufLevels, ctlWords+1)
	return err
}

// parentLevels queues applyParents for every level above the leaves, with
// the counts on the device, then the copy of the control block and the
// root level's replacement count into pinned words (ctlWords words, then
// the count), which it returns with the root level; they hold the results
// once the stream has passed the copy. Cost: the levels' kernels and a
// copy; no synchronization.
func (g *gpuTree) parentLevels(st treeState, lv level, rcap int) ([]uint64, level, error) {
	host, err := gpu.Host[uint64](g.pool, bufLevels, ctlWords+1)
	if err != nil {
		return nil, lv, err
	}
	lvls := gpu.Take[uint64](g.pool, bufLevels, levelsWords(g.height))
	ctl := gpu.View[uint64](lvls, 0, ctlWords)
	lv.hdr = gpu.View[uint64](lvls, 8*ctlWords, hdrWords)
	if err := g.k.levelsInit.Launch(g.s, gpu.D1(1), gpu.D1(1), 0, lv.hdr, uint64(lv.G), uint64(lv.R),
		uint64(g.nodes), uint64(g.capNodes), uint64(rcap), ctl); err != nil {
		return nil, lv, err
	}
	internal := max(g.nodes-st.leaves-st.freed, 0)
	for l := 1; l < g.height; l++ {
		hdr := gpu.View[uint64](lvls, 8*(ctlWords+l*hdrWords), hdrWords)
		if lv, err = g.applyParents(lv, hdr, ctl, internal, rcap); err != nil {
			return nil, lv, err
		}
	}
	if err := errors.Join(ctl.Read(g.s, 0, host[:ctlWords]), lv.hdr.Read(g.s, hdrR, host[ctlWords:])); err != nil {
		return nil, lv, err
	}
	return host, lv, nil
}

// applyParents rewrites the parents of a level's touched nodes (the CPU
// engine's applyParents) and returns their changes, with their header
// hdr; ctl is the control block (node allocation, freed parents,
// overflow), internal the live internal nodes before the batch and rcap
// the replacement buffers' size. Nothing is read back: the launches are
// sized by bounds (the parents are at most the children and the internal
// nodes; their entries at most order each plus the children's
// replacements; their pieces at most one each plus their entries /
// fill), and the kernels read the counts from the headers. Cost:
// bt_parent_of over the children's bound, a reduce-by-key, bt_parent_sizes
// and three scans over the parents' bound, bt_level_totals, then the
// zeroing of the new nodes and the staging and writing kernels over the
// replacements and entries.
func (g *gpuTree) applyParents(ch level, hdr, ctl *gpu.Buffer[uint64], internal, rcap int) (level, error) {
	G := ch.G // bound of the children
	PB := min(G, internal+1)
	PG := min(G, internal) // bound of the parents
	E := PG*g.order + ch.R
	nOld := PG * g.order
	R := min(rcap, E/g.fill+PG)
	order := uint32(g.order)
	par, pk, slot := gpu.Take[uint32](g.pool, "par", G), gpu.Take[uint64](g.pool, "pk", G), gpu.Take[uint32](g.pool, "slot", G)
	ps := 1 - ch.set
	pNode, pSum := gpu.Take[uint32](g.pool, setName("node", ps), G), gpu.Take[uint64](g.pool, "psum", G+1)
	cnt, err := gpu.Get[uint32](g.pool, bufCounters, 2)
	if err != nil {
		return level{}, err
	}
	if err := g.launch(g.k.parentOf, G, uint64(G), ch.hdr, ch.node, ch.oldMax, ch.gp, order, g.keys, g.count, g.parent,
		par, pk, slot); err != nil {
		return level{}, err
	}
	if err := prim.DevReduceByKey(g.pe, par, pk, pNode, pSum, G, gpu.View[uint32](cnt, 0, 1)); err != nil {
		return level{}, err
	}
	// The runs (at most PB: the parents and a last NIL run) stay on the
	// device; elements past them up to PB are zeroed, so the scans'
	// totals are at PB.
	gc, gp := gpu.Take[uint64](g.pool, setName("gc", ps), G+1), gpu.Take[uint64](g.pool, setName("gp", ps), G+1)
	oldMax, up := gpu.Take[uint64](g.pool, setName("oldmax", ps), G), gpu.Take[uint32](g.pool, "up", G)
	if err := g.launch(g.k.parentSizes, PB+1, uint64(PB), gpu.View[uint32](cnt, 0, 1), pNode, pSum, order, uint32(g.fill),
		g.keys, g.count, g.parent, g.kind, gc, gp, oldMax, up); err != nil {
		return level{}, err
	}
	for _, b := range []*gpu.Buffer[uint64]{pSum, gc, gp} {
		if err := prim.DevScanExclusive(g.pe, b, b, PB+1); err != nil {
			return level{}, err
		}
	}
	if err := g.k.levelTotals.Launch(g.s, gpu.D1(1), gpu.D1(1), 0, uint64(PB), gpu.View[uint32](cnt, 0, 1), pNode,
		gc, gp, ch.hdr, hdr, ctl); err != nil {
		return level{}, err
	}
	g.step("parents: parent of, reduce, sizes, scans")
	if err := g.k.zeroNodes.Launch(g.s, grid(E), gpu.D1(kernelBlock), 0, hdr, order,
		g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind); err != nil {
		return level{}, err
	}
	sk, sv := gpu.Take[uint64](g.pool, "mk", E), gpu.Take[uint64](g.pool, "mv", E)
	if err := g.launch(g.k.stageRepl, ch.R, ch.hdr, hdr, ch.gp, ch.chId, ch.chMax, slot, pSum, gc, sk, sv); err != nil {
		return level{}, err
	}
	if err := g.launch(g.k.stageKeep, nOld, hdr, pSum, gc, pNode, slot, ch.gp, order, g.keys, g.slots, sk, sv); err != nil {
		return level{}, err
	}
	out := level{set: ps, G: PG, R: R, node: pNode, oldMax: oldMax, gp: gp,
		chId: gpu.Take[uint32](g.pool, setName("chid", ps), R), chMax: gpu.Take[uint64](g.pool, setName("chmax", ps), R), hdr: hdr}
	if err := g.launch(g.k.writeInternal, E, hdr, gc, gp, pNode, up, sk, sv, order, g.keys, g.slots, g.count,
		g.parent, g.kind, out.chId, out.chMax); err != nil {
		return level{}, err
	}
	g.step("parents: stage, write")
	return out, nil
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
		g.trace.Synced()
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
