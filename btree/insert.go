package btree

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/par"
)

// insert upserts a non-empty batch: a radix sort of the batch, then
// buildSorted into an empty tree or insertSorted.
func (t *cpuTree) insert(keys, values []uint64) (engine.Timings, error) {
	c := startHostClock()
	k, v, err := t.sortBatch(keys, values)
	if err != nil {
		return engine.Timings{}, err
	}
	c.Mark(nil, engine.MarkSorted)
	if t.root == nilNode {
		err = t.buildSorted(k, v)
	} else {
		err = t.insertSorted(k, v)
	}
	return finishHostClock(c, "insert", len(keys)), err
}

// insertSorted inserts strictly increasing keys into a non-empty tree.
func (t *cpuTree) insertSorted(k, v []uint64) error {
	s := &t.st
	leaves, gs, err := t.groupByLeaf(k)
	if err != nil {
		return err
	}
	G := len(leaves)
	added := make([]int, G)
	pc := make([]uint32, G+1)
	par.For(G, groupGrain, t.opt.workers, func(lo, hi int) {
		for g := lo; g < hi; g++ {
			old := s.keys(leaves[g])[:s.count(leaves[g])]
			c := unionSize(old, k[gs[g]:gs[g+1]])
			added[g] = c - len(old)
			pc[g] = uint32(pieces(c, t.opt.order, t.opt.fill))
		}
	})
	out, extraOff, first, err := t.layout(leaves, pc)
	if err != nil {
		return err
	}
	par.For(G, groupGrain, t.opt.workers, func(lo, hi int) {
		var mk, mv []uint64
		for g := lo; g < hi; g++ {
			leaf := leaves[g]
			c := s.count(leaf)
			out.oldMax[g] = s.keys(leaf)[c-1]
			mk, mv = mergeInto(mk[:0], mv[:0], s.keys(leaf)[:c], s.slots(leaf)[:c], k[gs[g]:gs[g+1]], v[gs[g]:gs[g+1]])
			t.writeLeaf(out, g, leaf, first, extraOff[g], mk, mv)
		}
	})
	for _, a := range added {
		t.n += a
	}
	t.leaves += int(out.start[G]) - G
	return t.propagate(out)
}

// unionSize returns the number of distinct keys in two strictly increasing
// key lists. Cost: O(len(a) + len(b)).
func unionSize(a, b []uint64) int {
	i, j, n := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case b[j] < a[i]:
			j++
		default:
			i++
			j++
		}
		n++
	}
	return n + len(a) - i + len(b) - j
}

// mergeInto appends to mk, mv the merge of the strictly increasing pairs
// (ok, ov) and (nk, nv); on equal keys the new value wins. Cost:
// O(len(ok) + len(nk)).
func mergeInto(mk, mv, ok, ov, nk, nv []uint64) ([]uint64, []uint64) {
	i, j := 0, 0
	for i < len(ok) && j < len(nk) {
		switch {
		case ok[i] < nk[j]:
			mk, mv = append(mk, ok[i]), append(mv, ov[i])
			i++
		case nk[j] < ok[i]:
			mk, mv = append(mk, nk[j]), append(mv, nv[j])
			j++
		default:
			mk, mv = append(mk, nk[j]), append(mv, nv[j])
			i++
			j++
		}
	}
	mk, mv = append(mk, ok[i:]...), append(mv, ov[i:]...)
	return append(mk, nk[j:]...), append(mv, nv[j:]...)
}

// writeLeaf writes the merged pairs of touched leaf g as its pieces, links
// them into the leaf chain in place of the leaf and records them in out.
// Every node written belongs to this group alone (the prev link of the
// leaf's old successor included), so groups run in parallel. Cost:
// O(len(mk)).
func (t *cpuTree) writeLeaf(out changes, g int, leaf, first, extraOff uint32, mk, mv []uint64) {
	s := &t.st
	c := len(mk)
	p := int(out.start[g+1] - out.start[g])
	oldNext, up := s.next(leaf), s.parent(leaf)
	prev := leaf // the leaf keeps its prev link: its predecessor's group may rewrite it
	for q := range p {
		a, b := share(c, p, q), share(c, p, q+1)
		id := pieceID(leaf, first, extraOff, q)
		copy(s.keys(id), mk[a:b])
		copy(s.slots(id), mv[a:b])
		s.setCount(id, b-a)
		s.setKind(id, kindLeaf)
		if q > 0 {
			s.setParent(id, up)
			s.setPrev(id, prev)
		}
		if q+1 < p {
			s.setNext(id, pieceID(leaf, first, extraOff, q+1))
		} else {
			s.setNext(id, oldNext)
		}
		prev = id
		out.id[int(out.start[g])+q] = id
		out.max[int(out.start[g])+q] = mk[b-1]
	}
	if p > 1 && oldNext != nilNode {
		s.setPrev(oldNext, prev)
	}
}
