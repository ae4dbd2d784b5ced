package btree

import (
	"fmt"
	"time"

	"warpkv/internal/par"
)

// Insert upserts the pairs: a key already in the tree gets the new value,
// and for a key given more than once the last occurrence wins. Phases: sort
// the batch, find each key's leaf, group by leaf, merge each touched leaf
// with its keys (counted in a first pass, written in a second), split
// overflowing leaves into contiguous new leaves, propagate max keys and new
// children level by level. Cost: a radix sort of the batch, O(batch *
// height * log order) for the searches, O(touched leaves * order + batch)
// for the merges, spread over the workers (the keys of one leaf are merged
// by one goroutine). On the GPU engine the same phases run on the device
// (see the package documentation) and give the same node arrays; running
// out of device memory returns an error matching gpu.ErrOutOfMemory and
// leaves the tree as it was.
func (t *Tree) Insert(keys, values []uint64) error {
	if len(keys) != len(values) {
		return fmt.Errorf("btree: insert: %d keys but %d values", len(keys), len(values))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t0 := time.Now()
	if len(keys) == 0 {
		t.setLast(cpuTimes("insert", 0, t0, time.Time{}))
		return nil
	}
	if t.g != nil {
		bt := BatchTimes{Op: "insert", Keys: len(keys)}
		st, err := t.g.insertBatch(t.state(), keys, values, &bt)
		t.setState(st)
		if err != nil {
			return fmt.Errorf("btree: insert on the gpu: %w", err)
		}
		bt.Total = time.Since(t0)
		t.setLast(bt)
		return nil
	}
	k, v, err := t.sortBatch(keys, values)
	if err != nil {
		return fmt.Errorf("btree: insert: %w", err)
	}
	sorted := time.Now()
	defer func() { t.setLast(cpuTimes("insert", len(keys), t0, sorted)) }()
	if t.root == nilNode {
		return t.buildSorted(k, v)
	}
	if err := t.insertSorted(k, v); err != nil {
		return fmt.Errorf("btree: insert: %w", err)
	}
	return nil
}

// state is the tree's bookkeeping besides the node arrays.
func (t *Tree) state() treeState {
	return treeState{root: t.root, n: t.n, leaves: t.leaves, freed: t.freed}
}

// setState installs the bookkeeping that a GPU batch returned.
func (t *Tree) setState(s treeState) { t.root, t.n, t.leaves, t.freed = s.root, s.n, s.leaves, s.freed }

// insertSorted inserts strictly increasing keys into a non-empty tree.
func (t *Tree) insertSorted(k, v []uint64) error {
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
func (t *Tree) writeLeaf(out changes, g int, leaf, first, extraOff uint32, mk, mv []uint64) {
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
