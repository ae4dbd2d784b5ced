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

// propagate applies a level's changes to the levels above up to the root
// (the CPU engine's propagate without the filtering of unchanged nodes:
// an unchanged child rewrites its parent with the same words, and adds no
// node), then installs the root's replacements and, when the batch may
// have shrunk a node (shrinks: deletes), shortens a root with one child.
// An insert never does: it only adds entries, and an internal root (of
// Build, of replaceRoot, or after collapseRoot) has two children or more,
// so it skips collapseRoot's readback. Cost: per level, the kernels of
// applyParents and its synchronizations.
func (g *gpuTree) propagate(st treeState, lv level, shrinks bool) (treeState, error) {
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
	g.step("root")
	if !shrinks {
		return st, nil
	}
	st, err = g.collapseRoot(st)
	g.step("collapse root")
	return st, err
}

// applyParents rewrites the parents of a level's touched nodes (the CPU
// engine's applyParents) and returns their changes and the number of
// parents freed. Cost: bt_parent_of over the children, a reduce-by-key,
// bt_parent_sizes and three scans over as many elements as children, one
// synchronization (the parents' count and totals), then the staging and
// writing kernels over the replacements and entries.
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
	// Sized by G (at least the parents' count PG, which stays on the
	// device until the one readback below): elements past PG are zeroed,
	// so the scans' totals are at G too.
	gc, gp := gpu.Take[uint64](g.pool, setName("gc", ps), G+1), gpu.Take[uint64](g.pool, setName("gp", ps), G+1)
	oldMax, up := gpu.Take[uint64](g.pool, setName("oldmax", ps), G), gpu.Take[uint32](g.pool, "up", G)
	if err := g.launch(g.k.parentSizes, G+1, uint64(G), gpu.View[uint32](cnt, 0, 1), pNode, pSum, order, uint32(g.fill),
		g.keys, g.count, g.parent, g.kind, gc, gp, oldMax, up); err != nil {
		return level{}, 0, err
	}
	for _, b := range []*gpu.Buffer[uint64]{pSum, gc, gp} {
		if err := prim.DevScanExclusive(g.pe, b, b, G+1); err != nil {
			return level{}, 0, err
		}
	}
	g.step("parents: parent of, reduce, sizes, scans")
	var c [1]uint32
	w := make([]uint64, 2)
	g.trace.Synced()
	if err := errors.Join(cnt.Read(g.s, 0, c[:]), gc.Read(g.s, G, w[0:1]), gp.Read(g.s, G, w[1:2]), g.s.Synchronize()); err != nil {
		return level{}, 0, err
	}
	g.step("readback: parents, totals")
	PG := int(c[0])
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
	g.step("parents: stage, write")
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
