package art

import (
	"bytes"
	"github.com/warpkv/warpkv/internal/par"
)

// hit is where a delete's key was found: its leaf, the node holding it
// (node id, or a root parent word), the slot there (-1 the terminator) and
// that node's depth (0 for a node in the root array; -1 when the leaf is
// in the root array itself).
type hit struct {
	leaf  uint64
	par   uint64
	slot  int
	depth int
}

// findHit walks key k down to its leaf, comparing the stored prefix bytes
// on the way and the whole key at the leaf. Cost: O(depth).
func (s *store) findHit(k []byte) (hit, bool) {
	w := s.width
	slot := rootSlot(k, w)
	l := s.root[slot]
	h := hit{par: rootParent(slot), depth: -1}
	D := min(w, len(k))
	for l != 0 {
		if isLeaf(l) {
			if bytes.Equal(s.leafKey(l), k) {
				h.leaf = l
				return h, true
			}
			return hit{}, false
		}
		r := s.rec(l)
		plen := plenOf(r)
		if len(k) < D+plen || !bytes.Equal(k[D:D+min(plen, prefixStored)], prefixBytes(r)) {
			return hit{}, false
		}
		d := D + plen
		h.par, h.depth = nodeID(l), h.depth+1
		if len(k) == d {
			l, h.slot = r[wTerm], slotTerm
		} else {
			h.slot = int(k[d])
			l, _ = findChild(r, linkKind(l), h.slot)
		}
		D = d + 1
	}
	return hit{}, false
}

// remove deletes the keys of sorted distinct positions order of kb and
// returns how many were present: find each leaf; free the leaves (root
// slots holding one are cleared); then one node round per depth, deepest
// first, each taking the entries the round below emitted. Cost: one walk
// per key, then the rounds over the touched nodes.
func (s *store) remove(kb Keys, order []uint32, workers int) int {
	n := len(order)
	hits := make([]hit, n)
	ok := make([]bool, n)
	par.For(n, keyGrain, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			hits[i], ok[i] = s.findHit(kb.At(int(order[i])))
		}
	})
	var byDepth []entries
	found := 0
	for i := range n {
		if !ok[i] {
			continue
		}
		found++
		h := hits[i]
		s.freeLeaf(h.leaf)
		if h.depth < 0 {
			s.root[linkIndex(h.par)] = 0
			continue
		}
		for len(byDepth) <= h.depth {
			byDepth = append(byDepth, entries{})
		}
		byDepth[h.depth].add(h.par, h.slot+1, opDel, 0, 0, uint32(i))
	}
	var carried entries
	for d := len(byDepth) - 1; d >= 0; d-- {
		ents := byDepth[d]
		for e := range carried.len() {
			ents.add(carried.node[e], int(carried.code[e]), carried.op[e], carried.link[e], 0, carried.key[e])
		}
		ents.sort()
		res := s.nodeRound(&ents, nil, nil, workers, false)
		for _, rw := range res.rootWrites {
			s.root[rw.slot] = rw.link
		}
		carried = res.emitted
	}
	s.n -= found
	return found
}
