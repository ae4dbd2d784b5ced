package art

import (
	"slices"
	"sort"
)

// Node edits: the changes a batch makes to existing nodes, applied in node
// rounds (one round for an insert, one per depth for a delete) in the same
// phases on both engines (art.cu's an_* kernels):
//
//	U1 plan, one per touched node: its new children and kind, and whether
//	   it moves (kind change), empties or collapses (deletes only);
//	   allocation of the moving nodes, per kind in node order;
//	U2 emit, one per moving, empty or collapsing node: the entry its parent
//	   gets (read from its parent word, or its trim): the new link, a
//	   delete, or the collapsed node's last entry;
//	U3 write, one per touched node: the merged node at its place (in place
//	   or the new record), its parent word, and the parent words of its
//	   inner children that no other writer sets;
//	U4 in place: entries whose target is not touched this round (the root
//	   array, new nodes, untouched nodes);
//	U5 free: moved, emptied and collapsed records, in node order.

// Entry operations.
const (
	opAdd  = 1 // a new entry at an empty slot
	opSet  = 2 // the slot's link is replaced
	opDel  = 3 // the slot's entry is removed
	opTrim = 4 // the node's prefix is cut (an insert placed it under a new node)
)

// entries target nodes (by node id, aux cleared) or the root array (root
// parent words), structure of arrays.
type entries struct {
	node []uint64
	code []uint16 // 0 terminator, b+1 for byte b, codeTrim
	op   []uint8
	link []uint64
	grp  []uint32 // insert: the group (trims)
	key  []uint32 // delete: a batch key (by sorted position) under the node
}

func (e *entries) len() int { return len(e.node) }

func (e *entries) add(node uint64, code int, op uint8, l uint64, grp, key uint32) {
	e.node = append(e.node, node)
	e.code = append(e.code, uint16(code))
	e.op = append(e.op, op)
	e.link = append(e.link, l)
	e.grp = append(e.grp, grp)
	e.key = append(e.key, key)
}

// entryOrder is the sort key of an entry: node kind, node index, code.
func entryOrder(node uint64, code uint16) uint64 {
	return uint64(linkKind(node))<<49 | linkIndex(node)<<9 | uint64(code)
}

// sort orders the entries by target and code (each (target, code) appears
// once, so the order is total).
func (e *entries) sort() {
	n := e.len()
	idx := make([]int, n)
	keys := make([]uint64, n)
	for i := range idx {
		idx[i] = i
		keys[i] = entryOrder(e.node[i], e.code[i])
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	out := entries{
		node: make([]uint64, n), code: make([]uint16, n), op: make([]uint8, n), link: make([]uint64, n),
		grp: make([]uint32, n), key: make([]uint32, n),
	}
	for j, i := range idx {
		out.node[j], out.code[j], out.op[j], out.link[j], out.grp[j], out.key[j] = e.node[i], e.code[i], e.op[i], e.link[i], e.grp[i], e.key[i]
	}
	*e = out
}

// runs returns the distinct targets of sorted entries and the start of each
// one's entries (one more start than targets).
func (e *entries) runs() ([]uint64, []int) {
	var nodes []uint64
	var starts []int
	for i := range e.len() {
		if i == 0 || e.node[i] != e.node[i-1] {
			nodes = append(nodes, e.node[i])
			starts = append(starts, i)
		}
	}
	return nodes, append(starts, e.len())
}

// findRun returns the entries [a, b) of sorted entries aimed at node.
func (e *entries) findRun(node uint64) (int, int) {
	t := entryOrder(node, 0)
	a := sort.Search(e.len(), func(i int) bool { return entryOrder(e.node[i], 0) >= t })
	b := a
	for b < e.len() && e.node[b] == node {
		b++
	}
	return a, b
}

// Sources of a merged entry.
const (
	srcOld   = 0 // the node had it
	srcEntry = 1 // an entry of the batch set it (a new subtree)
	srcMoved = 2 // a moved child's new link (the child sets its own parent word)
)

// merged is a node's entries after its edits, children in byte order.
type merged struct {
	term  uint64
	n     int
	bytes [256]uint8
	links [256]uint64
	src   [256]uint8
}

// edit is one change to a node: code 0 the terminator, b+1 byte b.
type edit struct {
	code int
	op   uint8
	link uint64
	src  uint8
}

// merge applies edits sorted by code to node record r of kind k. Cost:
// O(children + edits).
func merge(r []uint64, k int, eds []edit, m *merged) {
	m.term, m.n = r[wTerm], 0
	j := 0
	for j < len(eds) && eds[j].code == 0 {
		if eds[j].op == opDel {
			m.term = 0
		} else {
			m.term = eds[j].link
		}
		j++
	}
	put := func(b int, l uint64, src uint8) {
		m.bytes[m.n], m.links[m.n], m.src[m.n] = uint8(b), l, src
		m.n++
	}
	P := positions(r, k)
	for p := 0; p < P; p++ {
		l, _ := childAt(r, k, p)
		if l == 0 {
			continue
		}
		b := byteAt(r, k, p)
		for j < len(eds) && eds[j].code-1 < b {
			if eds[j].op != opDel {
				put(eds[j].code-1, eds[j].link, eds[j].src)
			}
			j++
		}
		if j < len(eds) && eds[j].code-1 == b {
			if eds[j].op != opDel {
				put(b, eds[j].link, eds[j].src)
			}
			j++
			continue
		}
		put(b, l, srcOld)
	}
	for ; j < len(eds); j++ {
		if eds[j].op != opDel {
			put(eds[j].code-1, eds[j].link, eds[j].src)
		}
	}
}

// writeNode writes node record r of kind k from scratch: header, children
// in byte order (N48 slots in byte order too), every other word zero.
func writeNode(r []uint64, k int, plen int, prefix, parent uint64, m *merged) {
	clear(r)
	r[wMeta] = metaWord(plen, m.n)
	r[wPrefix] = prefix
	r[wTerm] = m.term
	r[wParent] = parent
	bs := wordBytes(r)
	for i := range m.n {
		b, l := m.bytes[i], m.links[i]
		switch k {
		case kindN4:
			bs[n4KeyByte+i] = b
			r[n4Child+i] = l
		case kindN16:
			bs[n16KeyByte+i] = b
			r[n16Child+i] = l
		case kindN48:
			bs[n48IndexByte+int(b)] = uint8(i + 1)
			r[n48Child+i] = l
		default:
			r[n256Child+int(b)] = l
		}
	}
}

// setChild writes link l at byte b (or the terminator, b = -1) of node
// record r of kind k, whose slot must exist. Cost: O(1) (N4, N16: a scan).
func setChild(r []uint64, k int, b int, l uint64) bool {
	if b < 0 {
		r[wTerm] = l
		return true
	}
	_, w := findChild(r, k, b)
	if w < 0 {
		return false
	}
	r[w] = l
	return true
}

// collapsePrefix returns the meta and prefix words of child c (record rc)
// when its parent, of prefix length plen and prefix word pw, collapses
// into it through byte b: the paths join as parent prefix, b, c's prefix.
func collapsePrefix(plen int, pw uint64, b int, rc []uint64) (meta, prefix uint64) {
	cp := plenOf(rc)
	np := plen + 1 + cp
	var buf [prefixStored]byte
	got := copy(buf[:], wordBytes([]uint64{pw})[:min(plen, prefixStored)])
	if got < prefixStored {
		buf[got] = byte(b)
		got++
		copy(buf[got:], wordBytes(rc[wPrefix : wPrefix+1])[:min(cp, prefixStored)])
	}
	var p [prefixStored]byte
	copy(p[:], buf[:min(np, prefixStored)])
	return rc[wMeta]&^0xffff | uint64(np), le64(p[:])
}
