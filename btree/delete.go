package btree

import (
	"fmt"
	"time"

	"warpkv/internal/par"
)

// Delete removes the given keys; keys not in the tree are ignored. Phases:
// sort the keys, find each key's leaf, group by leaf, drop each touched
// leaf's keys in place (one goroutine per leaf), free and unlink the leaves
// left empty, propagate max keys and freed children level by level, shorten
// a root with one child. Non-empty nodes are not merged; the tree is
// rebuilt when it falls under the fill threshold (see the package
// documentation). Cost: a radix sort of the batch, O(batch * height * log
// order) for the searches, O(touched leaves * order) for the leaves, plus
// O(n) when it rebuilds. On the GPU engine the same phases run on the
// device and give the same node arrays (the rebuild is a device build over
// the leaves' pairs); running out of device memory returns an error
// matching gpu.ErrOutOfMemory and leaves the tree as it was.
func (t *Tree) Delete(keys []uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t0 := time.Now()
	if len(keys) == 0 || t.root == nilNode {
		t.setLast(cpuTimes("delete", len(keys), t0, time.Time{}))
		return nil
	}
	if t.g != nil {
		bt := BatchTimes{Op: "delete", Keys: len(keys)}
		st, err := t.g.deleteBatch(t.state(), keys, t.opt.fill, &bt)
		t.setState(st)
		if err != nil {
			return fmt.Errorf("btree: delete on the gpu: %w", err)
		}
		bt.Total = time.Since(t0)
		t.setLast(bt)
		return nil
	}
	k, _, err := t.sortBatch(keys, nil)
	if err != nil {
		return fmt.Errorf("btree: delete: %w", err)
	}
	sorted := time.Now()
	defer func() { t.setLast(cpuTimes("delete", len(keys), t0, sorted)) }()
	if err := t.deleteSorted(k); err != nil {
		return fmt.Errorf("btree: delete: %w", err)
	}
	if t.underfull() {
		if err := t.rebuild(); err != nil {
			return fmt.Errorf("btree: delete: %w", err)
		}
	}
	return nil
}

// deleteSorted deletes strictly increasing keys from a non-empty tree.
func (t *Tree) deleteSorted(k []uint64) error {
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
func (t *Tree) underfull() bool { return underfullState(t.state(), t.opt.fill, t.st.n) }

// underfullState is underfull for the bookkeeping st of a tree with nodes
// allocated nodes, shared by both engines. Cost: O(1).
func underfullState(st treeState, fill, nodes int) bool {
	if st.root == nilNode {
		return false
	}
	return (st.leaves > 1 && 4*st.n < st.leaves*fill) || 2*st.freed > nodes
}

// rebuild builds the tree anew from its leaf chain. Cost: O(n).
func (t *Tree) rebuild() error {
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
func (t *Tree) firstLeaf() uint32 {
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
