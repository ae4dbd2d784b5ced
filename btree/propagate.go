package btree

import (
	"fmt"

	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// changes lists the touched nodes of one level, in key order, and what
// replaces each in its parent: node[g] is replaced by the nodes
// id[start[g]:start[g+1]] (none when it was freed), whose max keys are in
// max; oldMax[g] is the key its parent holds for it.
type changes struct {
	node   []uint32
	oldMax []uint64
	start  []uint32
	id     []uint32
	max    []uint64
}

// layout prepares the changes of a level whose touched nodes are nodes and
// will be replaced by pc[g] nodes each (pc has one spare element at the
// end): the first replacement of a node reuses it, the others are new nodes
// laid out contiguously in group order. It returns the changes (ids not yet
// filled), the offset of each group's new nodes from first, and first.
// Cost: two scans and one grow.
func (t *cpuTree) layout(nodes []uint32, pc []uint32) (changes, []uint32, uint32, error) {
	g := len(nodes)
	pc[g] = 0
	if err := prim.ScanExclusive(t.eng, pc, pc); err != nil {
		return changes{}, nil, 0, fmt.Errorf("btree: layout: %w", err)
	}
	extra := make([]uint32, g+1)
	for i := range g {
		if p := pc[i+1] - pc[i]; p > 1 {
			extra[i] = p - 1
		}
	}
	if err := prim.ScanExclusive(t.eng, extra, extra); err != nil {
		return changes{}, nil, 0, fmt.Errorf("btree: layout: %w", err)
	}
	first, err := t.st.grow(int(extra[g]))
	if err != nil {
		return changes{}, nil, 0, fmt.Errorf("btree: layout: %w", err)
	}
	total := pc[g]
	ch := changes{node: nodes, oldMax: make([]uint64, g), start: pc, id: make([]uint32, total), max: make([]uint64, total)}
	return ch, extra, first, nil
}

// pieceID returns the id of piece q of node (piece 0 is the node itself).
func pieceID(node, first, extraOff uint32, q int) uint32 {
	if q == 0 {
		return node
	}
	return first + extraOff + uint32(q-1)
}

// changed returns the changes that matter to the parents: nodes not
// replaced by themselves with their old max key. Cost: O(len(c.node)).
func (c changes) changed() changes {
	var out changes
	out.start = append(out.start, 0)
	for g, n := range c.node {
		a, b := c.start[g], c.start[g+1]
		if b-a == 1 && c.id[a] == n && c.max[a] == c.oldMax[g] {
			continue
		}
		out.node = append(out.node, n)
		out.oldMax = append(out.oldMax, c.oldMax[g])
		out.id = append(out.id, c.id[a:b]...)
		out.max = append(out.max, c.max[a:b]...)
		out.start = append(out.start, uint32(len(out.id)))
	}
	return out
}

// propagate applies the changes of a level to the levels above, one level
// at a time, up to the root; then it shortens a root with one child. Cost:
// O(touched nodes * order) over the workers.
func (t *cpuTree) propagate(ch changes) error {
	for {
		ch = ch.changed()
		if len(ch.node) == 0 {
			break
		}
		if t.st.parent(ch.node[0]) == nilNode {
			if err := t.replaceRoot(ch); err != nil {
				return err
			}
			break
		}
		var err error
		if ch, err = t.applyParents(ch); err != nil {
			return err
		}
	}
	t.collapseRoot()
	return nil
}

// replaceRoot installs the replacements of the root: none empties the
// tree, several get new levels above them. Cost: O(replacements).
func (t *cpuTree) replaceRoot(ch changes) error {
	ids := ch.id[ch.start[0]:ch.start[1]]
	switch len(ids) {
	case 0:
		t.clear()
	case 1:
		t.root = ids[0]
		t.st.setParent(t.root, nilNode)
	default:
		root, err := t.buildUpper(ids, ch.max[ch.start[0]:ch.start[1]])
		if err != nil {
			return fmt.Errorf("btree: new root: %w", err)
		}
		t.root = root
	}
	return nil
}

// collapseRoot replaces an internal root with one child by the child.
// Cost: O(levels removed).
func (t *cpuTree) collapseRoot() {
	s := &t.st
	for t.root != nilNode && s.kind(t.root) == kindInternal && s.count(t.root) == 1 {
		c := uint32(s.slots(t.root)[0])
		t.free(t.root)
		t.freed++
		t.root = c
		s.setParent(c, nilNode)
	}
}

// applyParents groups the changes by parent and rewrites each touched
// parent: every changed child entry is replaced by the child's
// replacements, the entries are split into pieces like leaves, children
// get their new parents; it returns the changes of the parents' level.
// Cost: O(touched parents * order + replacements) over the workers.
func (t *cpuTree) applyParents(ch changes) (changes, error) {
	s := &t.st
	parentOf := make([]uint32, len(ch.node))
	for i, n := range ch.node {
		parentOf[i] = s.parent(n)
	}
	parents, gs, err := t.runs(parentOf)
	if err != nil {
		return changes{}, err
	}
	G := len(parents)
	pc := make([]uint32, G+1)
	entries := func(g int) int {
		a, b := gs[g], gs[g+1]
		return s.count(parents[g]) - int(b-a) + int(ch.start[b]-ch.start[a])
	}
	par.For(G, groupGrain, t.opt.workers, func(lo, hi int) {
		for g := lo; g < hi; g++ {
			pc[g] = uint32(pieces(entries(g), t.opt.order, t.opt.fill))
		}
	})
	out, extraOff, first, err := t.layout(parents, pc)
	if err != nil {
		return changes{}, err
	}
	par.For(G, groupGrain, t.opt.workers, func(lo, hi int) {
		var ek []uint64
		var es []uint64
		for g := lo; g < hi; g++ {
			P := parents[g]
			c := s.count(P)
			ek, es = ek[:0], es[:0]
			keys, slots := s.keys(P)[:c], s.slots(P)[:c]
			next := int(gs[g])
			for j := range c {
				if next < int(gs[g+1]) && uint32(slots[j]) == ch.node[next] {
					a, b := ch.start[next], ch.start[next+1]
					for r := a; r < b; r++ {
						ek = append(ek, ch.max[r])
						es = append(es, uint64(ch.id[r]))
					}
					next++
					continue
				}
				ek = append(ek, keys[j])
				es = append(es, slots[j])
			}
			out.oldMax[g] = keys[c-1]
			t.writeInternal(out, g, P, first, extraOff[g], ek, es)
		}
	})
	for g := range G {
		if out.start[g+1] == out.start[g] {
			t.freed++
		}
	}
	return out, nil
}

// writeInternal writes the entries ek, es of touched internal node P as its
// pieces and records them in out. Cost: O(len(ek)).
func (t *cpuTree) writeInternal(out changes, g int, P, first, extraOff uint32, ek, es []uint64) {
	s := &t.st
	c := len(ek)
	p := int(out.start[g+1] - out.start[g])
	if p == 0 {
		t.free(P)
		return
	}
	up := s.parent(P)
	for q := range p {
		a, b := share(c, p, q), share(c, p, q+1)
		id := pieceID(P, first, extraOff, q)
		copy(s.keys(id), ek[a:b])
		sl := s.slots(id)
		copy(sl, es[a:b])
		for _, child := range sl[:b-a] {
			s.setParent(uint32(child), id)
		}
		s.setCount(id, b-a)
		s.setKind(id, kindInternal)
		s.setParent(id, up)
		out.id[int(out.start[g])+q] = id
		out.max[int(out.start[g])+q] = ek[b-1]
	}
}
