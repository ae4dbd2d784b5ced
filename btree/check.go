package btree

import "fmt"

// check is Tree.Check on the node arrays in t.st.
func (t *cpuTree) check() error {
	if t.root == nilNode {
		if t.n != 0 || t.leaves != 0 {
			return fmt.Errorf("btree: check: empty tree with %d keys, %d leaves", t.n, t.leaves)
		}
		return nil
	}
	s := &t.st
	if s.parent(t.root) != nilNode {
		return fmt.Errorf("btree: check: root %d has parent %d", t.root, s.parent(t.root))
	}
	if s.kind(t.root) == kindInternal && s.count(t.root) < 2 {
		return fmt.Errorf("btree: check: internal root %d has %d children", t.root, s.count(t.root))
	}
	var leaves []uint32
	nodes := 0
	level := []uint32{t.root}
	for depth := 0; len(level) > 0; depth++ {
		var below []uint32
		for _, id := range level {
			nodes++
			if int(id) >= s.n {
				return fmt.Errorf("btree: check: node %d past %d allocated", id, s.n)
			}
			kind, c := s.kind(id), s.count(id)
			if kind != kindLeaf && kind != kindInternal {
				return fmt.Errorf("btree: check: node %d at depth %d has kind %d", id, depth, kind)
			}
			if c < 1 || c > t.opt.order {
				return fmt.Errorf("btree: check: node %d has %d entries, want 1 to %d", id, c, t.opt.order)
			}
			keys := s.keys(id)[:c]
			for j := 1; j < c; j++ {
				if keys[j-1] >= keys[j] {
					return fmt.Errorf("btree: check: node %d keys %d, %d not increasing", id, keys[j-1], keys[j])
				}
			}
			if kind == kindLeaf {
				if len(below) > 0 {
					return fmt.Errorf("btree: check: leaf %d at depth %d beside internal nodes", id, depth)
				}
				leaves = append(leaves, id)
				continue
			}
			if len(leaves) > 0 {
				return fmt.Errorf("btree: check: internal node %d at depth %d beside leaves", id, depth)
			}
			for j, sl := range s.slots(id)[:c] {
				child := uint32(sl)
				if int(child) >= s.n {
					return fmt.Errorf("btree: check: node %d child %d past %d allocated", id, child, s.n)
				}
				if p := s.parent(child); p != id {
					return fmt.Errorf("btree: check: node %d has parent %d, want %d", child, p, id)
				}
				if cc := s.count(child); cc < 1 || cc > t.opt.order {
					return fmt.Errorf("btree: check: node %d has %d entries, want 1 to %d", child, cc, t.opt.order)
				}
				if s.maxKey(child) != keys[j] {
					return fmt.Errorf("btree: check: node %d key %d is not the max key of child %d", id, keys[j], child)
				}
				below = append(below, child)
			}
		}
		if len(leaves) > 0 && len(below) > 0 {
			return fmt.Errorf("btree: check: leaves and internal nodes at depth %d", depth)
		}
		level = below
	}
	return t.checkLeaves(leaves, nodes)
}

// checkLeaves checks the leaf chain against the leaves in tree order and
// the counts. Cost: O(leaves).
func (t *cpuTree) checkLeaves(leaves []uint32, nodes int) error {
	s := &t.st
	n := 0
	prev := nilNode
	for i, id := range leaves {
		if s.prev(id) != prev {
			return fmt.Errorf("btree: check: leaf %d has prev %d, want %d", id, s.prev(id), prev)
		}
		want := nilNode
		if i+1 < len(leaves) {
			want = leaves[i+1]
		}
		if s.next(id) != want {
			return fmt.Errorf("btree: check: leaf %d has next %d, want %d", id, s.next(id), want)
		}
		if prev != nilNode && s.maxKey(prev) >= s.keys(id)[0] {
			return fmt.Errorf("btree: check: leaf %d starts at %d, not after %d", id, s.keys(id)[0], s.maxKey(prev))
		}
		n += s.count(id)
		prev = id
	}
	switch {
	case n != t.n:
		return fmt.Errorf("btree: check: %d keys in leaves, Len %d", n, t.n)
	case len(leaves) != t.leaves:
		return fmt.Errorf("btree: check: %d leaves, %d counted", len(leaves), t.leaves)
	case nodes != s.n-t.freed:
		return fmt.Errorf("btree: check: %d reachable nodes, %d allocated and %d free", nodes, s.n, t.freed)
	}
	return nil
}
