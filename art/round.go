package art

import (
	"sort"

	"github.com/warpkv/warpkv/internal/par"
)

// Outcomes of a touched node in a node round.
const (
	outStay     = 0 // rewritten in place
	outMove     = 1 // rewritten into a record of another kind
	outEmpty    = 2 // no entry left: freed, its parent loses the slot
	outCollapse = 3 // one entry left: freed, the entry takes its place
)

// rootWrite is a root slot's new link.
type rootWrite struct {
	slot uint64
	link uint64
}

// roundResult is what a node round leaves to its caller: root writes and,
// for a delete, the entries of the parents (the next round's).
type roundResult struct {
	rootWrites []rootWrite
	emitted    entries
}

// nodeRound applies sorted entries to their nodes in the phases U1-U5 of
// nodes.go. In an insert round (insert true) the moves' new links go to
// their parents in the same round (to the parents' writers, or in place);
// in a delete round they, and the emptied and collapsed nodes' entries, go
// to the next round (the parents are one level up). groups and trims are
// an insert's (nil for a delete). Cost: O(touched nodes * node size) over
// the workers, plus sorting the emitted entries.
func (s *store) nodeRound(ents *entries, groups []group, trims []trim, workers int, insert bool) roundResult {
	rd := &round{s: s, ents: ents, groups: groups, trims: trims, workers: workers, insert: insert}
	rd.nodes, rd.starts = ents.runs()
	rd.plan()
	rd.allocate()
	rd.collapseRemaining()
	res := rd.emit()
	rd.write()
	rd.free()
	rd.placeMoved()
	res.emitted.sort()
	return res
}

// round is one nodeRound: the touched nodes (nodes, their entries from
// starts) and, per touched node t, what the steps decide: out[t], the new
// count and kind, whether a trim applies, the link after the round
// (final), and a collapsing node's remaining child.
type round struct {
	s         *store
	ents      *entries
	groups    []group
	trims     []trim
	workers   int
	insert    bool
	nodes     []uint64
	starts    []int
	out       []uint8
	newCount  []int
	newKind   []int
	hasTrim   []bool
	final     []uint64
	remaining []uint64
	remByte   []int
	moved     entries // insert: the moves' links for their parents
}

// plan is U1, one per touched node: its count after the entries, and
// whether it stays, moves to another kind, empties or collapses.
func (rd *round) plan() {
	s, ents, T := rd.s, rd.ents, len(rd.nodes)
	rd.out, rd.newCount, rd.newKind, rd.hasTrim = make([]uint8, T), make([]int, T), make([]int, T), make([]bool, T)
	par.For(T, nodeGrain, rd.workers, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			r := s.rec(rd.nodes[t])
			c, term := countOf(r), r[wTerm] != 0
			for e := rd.starts[t]; e < rd.starts[t+1]; e++ {
				switch code, op := ents.code[e], ents.op[e]; {
				case op == opTrim:
					rd.hasTrim[t] = true
				case code == 0 && op == opAdd:
					term = true
				case code == 0 && op == opDel:
					term = false
				case op == opAdd:
					c++
				case op == opDel:
					c--
				}
			}
			rd.newCount[t] = c
			total := c
			if term {
				total++
			}
			switch {
			case total == 0:
				rd.out[t] = outEmpty
			case total == 1:
				rd.out[t] = outCollapse
			default:
				rd.newKind[t] = kindFor(c)
				if rd.newKind[t] != linkKind(rd.nodes[t]) {
					rd.out[t] = outMove
				}
			}
		}
	})
}

// allocate gives the moves their records, per kind in node order, and
// sets every touched node's link after the round.
func (rd *round) allocate() {
	T := len(rd.nodes)
	var req [numKinds + 1]int
	rank := make([]int, T)
	for t := range T {
		if rd.out[t] == outMove {
			rank[t] = req[rd.newKind[t]]
			req[rd.newKind[t]]++
		}
	}
	var idx [numKinds + 1]func(int) uint64
	for k := kindN4; k <= kindN256; k++ {
		idx[k] = rd.s.alloc(k, req[k])
	}
	rd.final = make([]uint64, T)
	for t := range T {
		rd.final[t] = rd.nodes[t]
		if rd.out[t] == outMove {
			rd.final[t] = link(rd.newKind[t], 0, idx[rd.newKind[t]](rank[t]))
		}
	}
}

// parentOf is touched node t's parent word (its trim's, when it has one).
func (rd *round) parentOf(t int) uint64 {
	if rd.hasTrim[t] {
		return rd.trims[rd.ents.grp[rd.starts[t+1]-1]].par
	}
	return rd.s.rec(rd.nodes[t])[wParent]
}

// find returns the touched index of node, or -1.
func (rd *round) find(node uint64) int {
	T := len(rd.nodes)
	t := sort.Search(T, func(i int) bool { return rd.nodes[i] >= node })
	if t < T && rd.nodes[t] == node {
		return t
	}
	return -1
}

// collapseRemaining finds, per collapsing node, the one child (or the
// terminator, byte -1) that takes its place; U2 needs it.
func (rd *round) collapseRemaining() {
	T := len(rd.nodes)
	rd.remaining, rd.remByte = make([]uint64, T), make([]int, T)
	par.For(T, nodeGrain, rd.workers, func(lo, hi int) {
		var m merged
		for t := lo; t < hi; t++ {
			if rd.out[t] != outCollapse {
				continue
			}
			merge(rd.s.rec(rd.nodes[t]), linkKind(rd.nodes[t]), rd.s.editsOf(rd.ents, rd.starts[t], rd.starts[t+1], nil, 0, 0), &m)
			if m.n == 0 {
				rd.remaining[t], rd.remByte[t] = m.term, -1
			} else {
				rd.remaining[t], rd.remByte[t] = m.links[0], int(m.bytes[0])
			}
		}
	})
}

// emit is U2: every node that does not stay sends its new link (the moved
// record, the remaining child, or a delete) to its parent: a root write,
// an entry of this round's moves (insert) or of the next round (delete).
func (rd *round) emit() roundResult {
	var res roundResult
	for t := range len(rd.nodes) {
		if rd.out[t] == outStay {
			continue
		}
		pw := rd.parentOf(t)
		var op uint8 = opSet
		l := rd.final[t]
		switch rd.out[t] {
		case outEmpty:
			op, l = opDel, 0
		case outCollapse:
			l = rd.remaining[t]
		}
		if linkKind(pw) == kindRoot {
			res.rootWrites = append(res.rootWrites, rootWrite{linkIndex(pw), l})
			continue
		}
		code := linkAux(pw) + 1
		if rd.insert {
			rd.moved.add(nodeID(pw), code, op, l, 0, 0)
		} else {
			res.emitted.add(nodeID(pw), code, op, l, 0, rd.ents.key[rd.starts[t]])
		}
	}
	rd.moved.sort()
	return res
}

// write is U3, one per touched node: a collapsing node's remaining child
// takes its prefix; a staying or moving node is merged with its entries
// and written (in place or to its new record), with its children's parent
// words where they change.
func (rd *round) write() {
	par.For(len(rd.nodes), nodeGrain, rd.workers, func(lo, hi int) {
		var m merged
		for t := lo; t < hi; t++ {
			switch rd.out[t] {
			case outEmpty:
			case outCollapse:
				r := rd.s.rec(rd.nodes[t])
				if c := rd.remaining[t]; isNode(c) {
					rc := rd.s.rec(c)
					meta, prefix := collapsePrefix(plenOf(r), r[wPrefix], rd.remByte[t], rc)
					rc[wMeta], rc[wPrefix], rc[wParent] = meta, prefix, r[wParent]
				}
			default:
				rd.writeMerged(t, &m)
			}
		}
	})
}

// writeMerged writes staying or moving node t: its children merged with
// its entries (and, in an insert, its moved children's new links), its
// prefix (a trim's when it has one) and parent word (the parent's new
// record when the parent moves), then the parent words of children that
// need them.
func (rd *round) writeMerged(t int, m *merged) {
	s, node := rd.s, rd.nodes[t]
	k := linkKind(node)
	r := s.rec(node)
	var ma, mb int
	if rd.insert {
		ma, mb = rd.moved.findRun(node)
	}
	merge(r, k, s.editsOf(rd.ents, rd.starts[t], rd.starts[t+1], &rd.moved, ma, mb), m)
	plen, prefix := plenOf(r), r[wPrefix]
	var pw uint64
	if rd.hasTrim[t] {
		gi := rd.ents.grp[rd.starts[t+1]-1]
		g, tr := &rd.groups[gi], rd.trims[gi]
		plen = int(g.tn) - int(tr.d)
		key := s.keyOfRef(g.tref, g.tn)
		prefix = packPrefix(key[tr.d:])
		pw = tr.par
	} else {
		pw = r[wParent]
		if linkKind(pw) != kindRoot {
			if p := rd.find(nodeID(pw)); p >= 0 && rd.out[p] == outMove {
				pw = parentWord(rd.final[p], linkAux(pw))
			}
		}
	}
	if rd.out[t] == outMove {
		writeNode(s.rec(rd.final[t]), rd.newKind[t], plen, prefix, pw, m)
	} else {
		// In place: m was read from r before this write.
		writeNode(r, k, plen, prefix, pw, m)
	}
	for i := range m.n {
		c := m.links[i]
		if !isNode(c) || m.src[i] == srcMoved || (m.src[i] == srcOld && rd.find(c) >= 0) {
			continue
		}
		if rd.out[t] == outMove || m.src[i] == srcEntry {
			s.rec(c)[wParent] = parentWord(rd.final[t], int(m.bytes[i]))
		}
	}
}

// free puts every touched node that does not stay on its kind's pending
// list (freed at the batch's end).
func (rd *round) free() {
	var frees [numKinds + 1][]uint32
	for t, node := range rd.nodes {
		if rd.out[t] != outStay {
			k := linkKind(node)
			frees[k] = append(frees[k], uint32(linkIndex(node)))
		}
	}
	for k := range frees {
		rd.s.pending[k] = append(rd.s.pending[k], frees[k]...)
	}
}

// placeMoved is U4 (insert): the moves' links whose parents were not
// touched, written in place.
func (rd *round) placeMoved() {
	if !rd.insert {
		return
	}
	for e := range rd.moved.len() {
		if rd.find(rd.moved.node[e]) >= 0 {
			continue
		}
		p := rd.moved.node[e]
		setChild(rd.s.rec(p), linkKind(p), int(rd.moved.code[e])-1, rd.moved.link[e])
	}
}

// editsOf returns the edits of entries [a, b) and of moved entries
// [ma, mb) (nil moved: none), merged by code; trims are left out.
func (s *store) editsOf(ents *entries, a, b int, moved *entries, ma, mb int) []edit {
	var eds []edit
	i, j := a, ma
	for i < b || (moved != nil && j < mb) {
		useMoved := moved != nil && j < mb && (i >= b || moved.code[j] < ents.code[i])
		if useMoved {
			eds = append(eds, edit{code: int(moved.code[j]), op: moved.op[j], link: moved.link[j], src: srcMoved})
			j++
			continue
		}
		if ents.op[i] != opTrim {
			eds = append(eds, edit{code: int(ents.code[i]), op: ents.op[i], link: ents.link[i], src: srcEntry})
		}
		i++
	}
	return eds
}

// keyOfRef returns the first n bytes of the key of a leaf reference.
func (s *store) keyOfRef(ref uint64, n uint32) []byte { return s.leafKey(ref)[:n] }
