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
	nodes, starts := ents.runs()
	T := len(nodes)
	out := make([]uint8, T)
	newCount := make([]int, T)
	newKind := make([]int, T)
	hasTrim := make([]bool, T)
	// U1 plan
	par.For(T, nodeGrain, workers, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			r := s.rec(nodes[t])
			c, term := countOf(r), r[wTerm] != 0
			for e := starts[t]; e < starts[t+1]; e++ {
				switch code, op := ents.code[e], ents.op[e]; {
				case op == opTrim:
					hasTrim[t] = true
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
			newCount[t] = c
			total := c
			if term {
				total++
			}
			switch {
			case total == 0:
				out[t] = outEmpty
			case total == 1:
				out[t] = outCollapse
			default:
				newKind[t] = kindFor(c)
				if newKind[t] != linkKind(nodes[t]) {
					out[t] = outMove
				}
			}
		}
	})
	// Allocation of the moves, per kind in node order.
	var req [numKinds + 1]int
	rank := make([]int, T)
	for t := range T {
		if out[t] == outMove {
			rank[t] = req[newKind[t]]
			req[newKind[t]]++
		}
	}
	var idx [numKinds + 1]func(int) uint64
	for k := kindN4; k <= kindN256; k++ {
		idx[k] = s.alloc(k, req[k])
	}
	final := make([]uint64, T) // each touched node's link after the round
	for t := range T {
		final[t] = nodes[t]
		if out[t] == outMove {
			final[t] = link(newKind[t], 0, idx[newKind[t]](rank[t]))
		}
	}
	parentOf := func(t int) uint64 {
		if hasTrim[t] {
			return trims[ents.grp[starts[t+1]-1]].par
		}
		return s.rec(nodes[t])[wParent]
	}
	find := func(node uint64) int { // the touched index of node, or -1
		t := sort.Search(T, func(i int) bool { return nodes[i] >= node })
		if t < T && nodes[t] == node {
			return t
		}
		return -1
	}
	// U2 emit. The remaining entry of a collapsing node is needed here.
	var res roundResult
	var moved entries // insert: the moves' links for their parents
	remaining := make([]uint64, T)
	remByte := make([]int, T)
	par.For(T, nodeGrain, workers, func(lo, hi int) {
		var m merged
		for t := lo; t < hi; t++ {
			if out[t] != outCollapse {
				continue
			}
			merge(s.rec(nodes[t]), linkKind(nodes[t]), s.editsOf(ents, starts[t], starts[t+1], nil, 0, 0), &m)
			if m.n == 0 {
				remaining[t], remByte[t] = m.term, -1
			} else {
				remaining[t], remByte[t] = m.links[0], int(m.bytes[0])
			}
		}
	})
	for t := range T {
		if out[t] == outStay {
			continue
		}
		pw := parentOf(t)
		var op uint8 = opSet
		l := final[t]
		switch out[t] {
		case outEmpty:
			op, l = opDel, 0
		case outCollapse:
			l = remaining[t]
		}
		if linkKind(pw) == kindRoot {
			res.rootWrites = append(res.rootWrites, rootWrite{linkIndex(pw), l})
			continue
		}
		code := linkAux(pw) + 1
		if insert {
			moved.add(nodeID(pw), code, op, l, 0, 0)
		} else {
			res.emitted.add(nodeID(pw), code, op, l, 0, ents.key[starts[t]])
		}
	}
	moved.sort()
	// U3 write.
	var frees [numKinds + 1][]uint32
	par.For(T, nodeGrain, workers, func(lo, hi int) {
		var m merged
		for t := lo; t < hi; t++ {
			node := nodes[t]
			k := linkKind(node)
			r := s.rec(node)
			switch out[t] {
			case outEmpty:
				continue
			case outCollapse:
				if c := remaining[t]; isNode(c) {
					rc := s.rec(c)
					meta, prefix := collapsePrefix(plenOf(r), r[wPrefix], remByte[t], rc)
					rc[wMeta], rc[wPrefix], rc[wParent] = meta, prefix, r[wParent]
				}
				continue
			}
			var ma, mb int
			if insert {
				ma, mb = moved.findRun(node)
			}
			merge(r, k, s.editsOf(ents, starts[t], starts[t+1], &moved, ma, mb), &m)
			plen, prefix := plenOf(r), r[wPrefix]
			var pw uint64
			if hasTrim[t] {
				g := &groups[ents.grp[starts[t+1]-1]]
				tr := trims[ents.grp[starts[t+1]-1]]
				plen = int(g.tn) - int(tr.d)
				key := s.keyOfRef(g.tref, g.tn)
				prefix = packPrefix(key[tr.d:])
				pw = tr.par
			} else {
				pw = r[wParent]
				if linkKind(pw) != kindRoot {
					if p := find(nodeID(pw)); p >= 0 && out[p] == outMove {
						pw = parentWord(final[p], linkAux(pw))
					}
				}
			}
			dst := s.rec(final[t])
			if out[t] == outMove {
				writeNode(dst, newKind[t], plen, prefix, pw, &m)
			} else {
				// In place: m was read from r before this write.
				writeNode(r, k, plen, prefix, pw, &m)
			}
			for i := range m.n {
				c := m.links[i]
				if !isNode(c) || m.src[i] == srcMoved || (m.src[i] == srcOld && find(c) >= 0) {
					continue
				}
				if out[t] == outMove || m.src[i] == srcEntry {
					s.rec(c)[wParent] = parentWord(final[t], int(m.bytes[i]))
				}
			}
		}
	})
	for t := range T {
		if out[t] != outStay {
			k := linkKind(nodes[t])
			frees[k] = append(frees[k], uint32(linkIndex(nodes[t])))
		}
	}
	// U4: the moves' links whose parents were not touched.
	if insert {
		for e := range moved.len() {
			if find(moved.node[e]) >= 0 {
				continue
			}
			p := moved.node[e]
			setChild(s.rec(p), linkKind(p), int(moved.code[e])-1, moved.link[e])
		}
	}
	for k := range frees {
		s.pending[k] = append(s.pending[k], frees[k]...)
	}
	res.emitted.sort()
	return res
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
