package art

import (
	"bytes"
	"cmp"
	"slices"
	"sort"

	"github.com/warpkv/warpkv/internal/par"
)

// Classes of an insert's keys (art.cu's ai_classify gives the same).
const (
	clsUpd   = 1 // present: its value is replaced in place
	clsRoot  = 2 // its root slot is empty: its group's subtree goes there
	clsAdd   = 3 // its walk ends at an empty slot of a node: the group is added there
	clsSplit = 4 // the slot holds another leaf, or a node whose prefix the key leaves: a new subtree over both replaces it
)

// walkResult is where an insert's key lands: its class, the edge (parent
// node id or root parent word, and slot: -1 the terminator), the old
// element at the edge (split) or the leaf (update), and the base depth of
// the subtree that goes at the edge.
type walkResult struct {
	cls  uint8
	par  uint64
	slot int
	tgt  uint64
	d    int
}

// prefixMismatch returns the first position in [0, plen) where key k,
// from byte D, leaves the prefix of node l (record r), or plen when it
// follows all of it. Prefix bytes past the stored ones come from the
// node's smallest leaf (every key below shares them).
func (s *store) prefixMismatch(l uint64, r []uint64, k []byte, D int) int {
	plen := plenOf(r)
	avail := len(k) - D
	st := min(plen, prefixStored)
	pb := wordBytes(r[wPrefix : wPrefix+1])
	for i := range st {
		if i >= avail || k[D+i] != pb[i] {
			return i
		}
	}
	if plen <= prefixStored {
		return plen
	}
	full := s.leafKey(s.minLeaf(l))
	for i := st; i < plen; i++ {
		if i >= avail || k[D+i] != full[D+i] {
			return i
		}
	}
	return plen
}

// classify walks key k down the tree with full prefix checks. Cost:
// O(depth) node reads, plus a smallest-leaf descent for prefixes longer
// than prefixStored.
func (s *store) classify(k []byte) walkResult {
	w := s.width
	slot := rootSlot(k, w)
	l := s.root[slot]
	par, sl, D := rootParent(slot), 0, min(w, len(k))
	if l == 0 {
		return walkResult{cls: clsRoot, par: par, d: D}
	}
	for {
		if isLeaf(l) {
			if bytes.Equal(s.leafKey(l), k) {
				return walkResult{cls: clsUpd, tgt: l}
			}
			return walkResult{cls: clsSplit, par: par, slot: sl, tgt: l, d: D}
		}
		r := s.rec(l)
		plen := plenOf(r)
		if s.prefixMismatch(l, r, k, D) < plen {
			return walkResult{cls: clsSplit, par: par, slot: sl, tgt: l, d: D}
		}
		d := D + plen
		c, nsl := r[wTerm], slotTerm
		if len(k) > d {
			nsl = int(k[d])
			c, _ = findChild(r, linkKind(l), nsl)
		}
		if c == 0 {
			return walkResult{cls: clsAdd, par: nodeID(l), slot: nsl, d: d + 1}
		}
		par, sl, l, D = nodeID(l), nsl, c, d+1
	}
}

// group is a run of an insert's new keys with the same edge.
type group struct {
	walkResult
	a, b  int    // keys [a, b) of the new keys
	tref  uint64 // split: the key reference of the old element (its leaf, or its node's smallest leaf)
	tn    uint32 // and its length (a node's: its path)
	trank int    // the old element's rank among the group's keys
	item  int    // the group's first item
}

// edgeOrder is the sort key of a key's edge: the edge's parent (a node id
// or a root parent word) and slot.
func edgeOrder(w walkResult) uint64 { return entryOrder(w.par, uint16(w.slot+1)) }

func sameEdge(a, b walkResult) bool {
	return a.cls == b.cls && a.par == b.par && a.slot == b.slot
}

// insert upserts the batch (sorted distinct positions order of kb; a
// value by batch position) in the phases of the package documentation
// and returns how many keys were new. Cost: the sort, one walk per key,
// the build rounds of the new subtrees, one node round.
func (s *store) insert(kb Keys, vals []uint64, order []uint32, workers int) int {
	n := len(order)
	wr := make([]walkResult, n)
	par.For(n, keyGrain, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			wr[i] = s.classify(kb.At(int(order[i])))
		}
	})
	// The new keys and their groups.
	var fresh []int // sorted positions of the new keys
	for i := range n {
		if wr[i].cls != clsUpd {
			fresh = append(fresh, i)
		}
	}
	// Keys that split the same edge need not be adjacent in key order (the
	// keys that go into the old node's subtree fall between them), so the
	// new keys are ordered by edge, stably: each group is then one run, in
	// key order. The GPU engine sorts the same (edge, position) pairs.
	slices.SortStableFunc(fresh, func(a, b int) int {
		return cmp.Compare(edgeOrder(wr[a]), edgeOrder(wr[b]))
	})
	var groups []group
	for j, i := range fresh {
		if j == 0 || !sameEdge(wr[i], wr[fresh[j-1]]) {
			groups = append(groups, group{walkResult: wr[i], a: j})
		}
		groups[len(groups)-1].b = j + 1
	}
	src := keySrc{s: s, b: kb}
	par.For(len(groups), nodeGrain, workers, func(lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			g := &groups[gi]
			if g.cls != clsSplit {
				continue
			}
			if isLeaf(g.tgt) {
				g.tref, g.tn = g.tgt, uint32(linkAux(g.tgt))
			} else {
				g.tref = s.minLeaf(g.tgt)
				g.tn = uint32(g.d + plenOf(s.rec(g.tgt)))
			}
			path := src.key(g.tref, g.tn)
			g.trank = sort.Search(g.b-g.a, func(x int) bool {
				return bytes.Compare(kb.At(int(order[fresh[g.a+x]])), path) >= 0
			})
		}
	})
	nSplit := 0
	for gi := range groups {
		groups[gi].item = groups[gi].a + nSplit
		if groups[gi].cls == clsSplit {
			nSplit++
		}
	}
	// Items and segments: one per group.
	m := len(fresh) + nSplit
	it := items{ref: make([]uint64, m), n: make([]uint32, m), old: make([]uint64, m), grp: make([]uint32, m), vals: vals}
	sg := segments{
		start: make([]uint32, len(groups)), end: make([]uint32, len(groups)), d: make([]uint32, len(groups)),
		dst: make([]uint64, len(groups)), par: make([]uint64, len(groups)),
	}
	par.For(len(groups), nodeGrain, workers, func(lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			g := &groups[gi]
			split := 0
			if g.cls == clsSplit {
				split = 1
				t := g.item + g.trank
				it.ref[t], it.n[t], it.old[t], it.grp[t] = g.tref, g.tn, g.tgt, uint32(gi)
			}
			for x := g.a; x < g.b; x++ {
				t := g.item + (x - g.a)
				if split == 1 && x-g.a >= g.trank {
					t++
				}
				p := order[fresh[x]]
				it.ref[t], it.n[t], it.grp[t] = link(kindBatch, 0, uint64(p)), kb.Offs[p+1]-kb.Offs[p], uint32(gi)
			}
			sg.start[gi], sg.end[gi], sg.d[gi] = uint32(g.item), uint32(g.item+g.b-g.a+split), uint32(g.d)
			sg.dst[gi] = uint64(dstGroup)<<dstShift | uint64(gi)
			switch {
			case linkKind(g.par) == kindRoot:
				sg.par[gi] = g.par
			case g.slot >= 0:
				sg.par[gi] = parentWord(g.par, g.slot)
			}
		}
	})
	b := &builder{s: s, src: src, it: it, workers: workers, groupLink: make([]uint64, len(groups)), trims: make([]trim, len(groups))}
	b.run(sg)
	// Node entries and root writes.
	var ents entries
	type rootWrite struct {
		slot uint64
		l    uint64
	}
	var roots []rootWrite
	for gi := range groups {
		g := &groups[gi]
		switch {
		case linkKind(g.par) == kindRoot:
			roots = append(roots, rootWrite{linkIndex(g.par), b.groupLink[gi]})
		case g.cls == clsAdd:
			ents.add(g.par, g.slot+1, opAdd, b.groupLink[gi], uint32(gi), 0)
		default:
			ents.add(g.par, g.slot+1, opSet, b.groupLink[gi], uint32(gi), 0)
		}
		if g.cls == clsSplit && isNode(g.tgt) {
			ents.add(nodeID(g.tgt), codeTrim, opTrim, 0, uint32(gi), 0)
		}
	}
	ents.sort()
	nr := s.nodeRound(&ents, groups, b.trims, workers, true)
	for _, rw := range roots {
		s.root[rw.slot] = rw.l
	}
	for _, rw := range nr.rootWrites {
		s.root[rw.slot] = rw.link
	}
	// Values of present keys.
	par.For(n, keyGrain, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if wr[i].cls == clsUpd {
				s.setLeafValue(wr[i].tgt, vals[order[i]])
			}
		}
	})
	s.n += len(fresh)
	return len(fresh)
}
