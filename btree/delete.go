package btree

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/par"
)

// remove deletes a non-empty batch of keys from a non-empty tree: a radix
// sort of the keys, deleteSorted, and a rebuild when the tree is
// underfull.
func (t *cpuTree) remove(keys []uint64) (engine.Timings, error) {
	c := startHostClock()
	k, _, err := t.sortBatch(keys, nil)
	if err != nil {
		return engine.Timings{}, err
	}
	c.Mark(nil, engine.MarkSorted)
	if err := t.deleteSorted(k); err != nil {
		return engine.Timings{}, err
	}
	if t.underfull() {
		if err := t.rebuild(); err != nil {
			return engine.Timings{}, err
		}
	}
	return finishHostClock(c, "delete", len(keys)), nil
}

// deleteSorted deletes strictly increasing keys from a non-empty tree.
func (t *cpuTree) deleteSorted(k []uint64) error {
	s := &t.st
	leaves, gs, err := t.groupByLeaf(k)
	if err != nil {
		return err
	}
	G := len(leaves)
	removed := make([]int, G)
	oldMax := make([]uint64, G)
	pc := make([]uint32, G+1)
	par.For(G, groupGrain, t.opt.workers, func(lo, hi int) {
		for g := lo; g < hi; g++ {
			leaf := leaves[g]
			c := s.count(leaf)
			keys, slots := s.keys(leaf), s.slots(leaf)
			oldMax[g] = keys[c-1]
			w := removeSorted(keys[:c], slots[:c], k[gs[g]:gs[g+1]])
			s.setCount(leaf, w)
			removed[g] = c - w
			if w > 0 {
				pc[g] = 1
			}
		}
	})
	out, _, _, err := t.layout(leaves, pc)
	if err != nil {
		return err
	}
	copy(out.oldMax, oldMax)
	for g, leaf := range leaves {
		t.n -= removed[g]
		if out.start[g+1] > out.start[g] {
			out.id[out.start[g]] = leaf
			out.max[out.start[g]] = s.maxKey(leaf)
			continue
		}
		// Unlink in key order, so runs of emptied leaves unlink correctly.
		p, n := s.prev(leaf), s.next(leaf)
		if p != nilNode {
			s.setNext(p, n)
		}
		if n != nilNode {
			s.setPrev(n, p)
		}
		t.free(leaf)
		t.freed++
		t.leaves--
	}
	return t.propagate(out)
}

// removeSorted drops from the strictly increasing pairs (keys, slots) the
// keys of del (strictly increasing), compacting in place, and returns how
// many pairs remain. Cost: O(len(keys) + len(del)).
func removeSorted(keys, slots, del []uint64) int {
	w, j := 0, 0
	for i, key := range keys {
		for j < len(del) && del[j] < key {
			j++
		}
		if j < len(del) && del[j] == key {
			continue
		}
		keys[w], slots[w] = key, slots[i]
		w++
	}
	return w
}

// underfull reports whether the tree should be rebuilt: keys fill under a
// quarter of the live leaves' fill capacity, or over half of the allocated
// nodes are free. Cost: O(1).
func (t *cpuTree) underfull() bool { return underfullState(t.state(), t.opt.fill, t.st.n) }

// underfullState is underfull for the bookkeeping st of a tree with nodes
// allocated nodes, shared by both engines. Cost: O(1).
func underfullState(st treeState, fill, nodes int) bool {
	if st.root == nilNode {
		return false
	}
	return (st.leaves > 1 && 4*st.n < st.leaves*fill) || 2*st.freed > nodes
}

// rebuild builds the tree anew from its leaf chain. Cost: O(n).
func (t *cpuTree) rebuild() error {
	k := make([]uint64, 0, t.n)
	v := make([]uint64, 0, t.n)
	s := &t.st
	for leaf := t.firstLeaf(); leaf != nilNode; leaf = s.next(leaf) {
		c := s.count(leaf)
		k = append(k, s.keys(leaf)[:c]...)
		v = append(v, s.slots(leaf)[:c]...)
	}
	return t.buildSorted(k, v)
}

// firstLeaf returns the leftmost leaf, or nilNode. Cost: O(height).
func (t *cpuTree) firstLeaf() uint32 {
	if t.root == nilNode {
		return nilNode
	}
	s := &t.st
	id := t.root
	for s.kind(id) == kindInternal {
		id = uint32(s.slots(id)[0])
	}
	return id
}
