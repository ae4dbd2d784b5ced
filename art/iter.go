package art

import (
	"bytes"

	"github.com/warpkv/warpkv/internal/par"
)

// Ordered iteration without a stack: a cursor is a node and a position in
// it (-1 the terminator, then the children: N4, N16 and N48 by rank, N256
// by byte), or a position in the root array; when a node is exhausted the
// cursor climbs through the node's parent word. The root array's positions
// interleave the short slots with the table: position e*(W+1)+j is, for
// j < W, the key of the first j bytes of entry e when e's last W-j bytes
// are zero, and for j = W the table entry e, which is the key order.
// art.cu's range kernels follow these functions.

// cursor is a place in the key order.
type cursor struct {
	node uint64 // a node link, or rootCur for the root array
	d    int    // the node's base depth
	pos  int    // the next position to look at
}

var rootCur = link(kindRoot, 0, 0)

// rootPositions is the number of positions of the root array.
func (s *store) rootPositions() int { return (s.width + 1) * tableLen(s.width) }

// rootPosLink returns the link at root position rp.
func (s *store) rootPosLink(rp int) uint64 {
	w := s.width
	e, j := rp/(w+1), rp%(w+1)
	if j == w {
		return s.root[e]
	}
	if e&(tableLen(w-j)-1) != 0 {
		return 0
	}
	return s.root[tableLen(w)+shortOffset(j)+e>>(8*(w-j))]
}

// rootPosOf returns the root position of root slot i.
func (s *store) rootPosOf(i uint64) int {
	w := s.width
	if int(i) < tableLen(w) {
		return int(i)*(w+1) + w
	}
	v := int(i) - tableLen(w)
	l := 0
	for l+1 < w && v >= shortOffset(l+1) {
		l++
	}
	e := (v - shortOffset(l)) << (8 * (w - l))
	return e*(w+1) + l
}

// posOf returns the position of the child at byte b of a node.
func posOf(r []uint64, k int, b int) int {
	p, _ := lowerPos(r, k, b)
	return p
}

// climb moves c from its exhausted node to the node's parent, past (asc)
// or before (desc) the node.
func (s *store) climb(c *cursor, r []uint64, step int) {
	pw := r[wParent]
	if linkKind(pw) == kindRoot {
		c.node, c.d, c.pos = rootCur, 0, s.rootPosOf(linkIndex(pw))+step
		return
	}
	p := nodeID(pw)
	pr := s.rec(p)
	c.node, c.d, c.pos = p, c.d-1-plenOf(pr), posOf(pr, linkKind(p), linkAux(pw))+step
}

// next returns the next leaf in ascending order and moves past it, or 0
// at the end.
func (s *store) next(c *cursor) uint64 {
	for {
		if c.node == rootCur {
			found := false
			for total := s.rootPositions(); c.pos < total; {
				l := s.rootPosLink(c.pos)
				c.pos++
				if l == 0 {
					continue
				}
				if isLeaf(l) {
					return l
				}
				c.node, c.d, c.pos, found = l, s.width, -1, true
				break
			}
			if !found {
				return 0
			}
			continue
		}
		r := s.rec(c.node)
		k := linkKind(c.node)
		P := positions(r, k)
		descended := false
		for c.pos < P {
			l, _ := childAt(r, k, c.pos)
			c.pos++
			if l == 0 {
				continue
			}
			if isLeaf(l) {
				return l
			}
			c.node, c.d, c.pos, descended = l, c.d+plenOf(r)+1, -1, true
			break
		}
		if !descended {
			s.climb(c, r, 1)
		}
	}
}

// prev returns the next leaf in descending order and moves past it, or 0
// at the start. It is next's mirror image (positions walked down from the
// last, a descent starting at a node's last position): the two stay
// separate because one walk with the direction as a parameter would hide
// the bounds each loop stops at.
func (s *store) prev(c *cursor) uint64 {
	for {
		if c.node == rootCur {
			found := false
			for c.pos >= 0 {
				l := s.rootPosLink(c.pos)
				c.pos--
				if l == 0 {
					continue
				}
				if isLeaf(l) {
					return l
				}
				c.node, c.d, c.pos, found = l, s.width, positions(s.rec(l), linkKind(l))-1, true
				break
			}
			if !found {
				return 0
			}
			continue
		}
		r := s.rec(c.node)
		k := linkKind(c.node)
		descended := false
		for c.pos >= -1 {
			l, _ := childAt(r, k, c.pos)
			c.pos--
			if l == 0 {
				continue
			}
			if isLeaf(l) {
				return l
			}
			c.node, c.d, c.pos, descended = l, c.d+plenOf(r)+1, positions(s.rec(l), linkKind(l))-1, true
			break
		}
		if !descended {
			s.climb(c, r, -1)
		}
	}
}

// prefixCompare compares key k from byte D with the whole prefix of node l
// (record r): -1 when k is smaller than every key below the node (it
// leaves the prefix downward or ends inside it), +1 when larger (it leaves
// upward), 0 when it follows all of the prefix.
func (s *store) prefixCompare(l uint64, r []uint64, k []byte, D int) int {
	plen := plenOf(r)
	m := s.prefixMismatch(l, r, k, D)
	if m == plen {
		return 0
	}
	if D+m >= len(k) {
		return -1
	}
	var pb byte
	if m < prefixStored {
		pb = wordBytes(r[wPrefix : wPrefix+1])[m]
	} else {
		pb = s.leafKey(s.minLeaf(l))[D+m]
	}
	if k[D+m] < pb {
		return -1
	}
	return 1
}

// seekGE returns the cursor before the smallest key >= lo.
func (s *store) seekGE(lo []byte) cursor {
	w := s.width
	if len(lo) < w {
		e := int(beUint(lo)) << (8 * (w - len(lo)))
		return cursor{rootCur, 0, e*(w+1) + len(lo)}
	}
	e := int(beUint(lo[:w]))
	rp := e*(w+1) + w
	l := s.root[e]
	switch {
	case l == 0:
		return cursor{rootCur, 0, rp + 1}
	case isLeaf(l):
		if bytes.Compare(s.leafKey(l), lo) >= 0 {
			return cursor{rootCur, 0, rp}
		}
		return cursor{rootCur, 0, rp + 1}
	}
	node, D := l, w
	for {
		r := s.rec(node)
		k := linkKind(node)
		switch s.prefixCompare(node, r, lo, D) {
		case -1:
			return cursor{node, D, -1}
		case 1:
			return cursor{node, D, positions(r, k)}
		}
		d := D + plenOf(r)
		if len(lo) == d {
			return cursor{node, D, -1}
		}
		p, exact := lowerPos(r, k, int(lo[d]))
		if !exact {
			return cursor{node, D, p}
		}
		c, _ := childAt(r, k, p)
		if isLeaf(c) {
			if bytes.Compare(s.leafKey(c), lo) >= 0 {
				return cursor{node, D, p}
			}
			return cursor{node, D, p + 1}
		}
		node, D = c, d+1
	}
}

// seekLT returns the cursor before (in descending order) the largest key
// < hi; hi nil: the largest key.
func (s *store) seekLT(hi []byte) cursor {
	w := s.width
	if hi == nil {
		return cursor{rootCur, 0, s.rootPositions() - 1}
	}
	if len(hi) < w {
		e := int(beUint(hi)) << (8 * (w - len(hi)))
		return cursor{rootCur, 0, e*(w+1) + len(hi) - 1}
	}
	e := int(beUint(hi[:w]))
	rp := e*(w+1) + w
	l := s.root[e]
	switch {
	case l == 0:
		return cursor{rootCur, 0, rp - 1}
	case isLeaf(l):
		if bytes.Compare(s.leafKey(l), hi) < 0 {
			return cursor{rootCur, 0, rp}
		}
		return cursor{rootCur, 0, rp - 1}
	}
	node, D := l, w
	for {
		r := s.rec(node)
		k := linkKind(node)
		switch s.prefixCompare(node, r, hi, D) {
		case -1:
			return cursor{node, D, -2}
		case 1:
			return cursor{node, D, positions(r, k) - 1}
		}
		d := D + plenOf(r)
		if len(hi) == d {
			return cursor{node, D, -2}
		}
		p, exact := lowerPos(r, k, int(hi[d]))
		if !exact {
			return cursor{node, D, p - 1}
		}
		c, _ := childAt(r, k, p)
		if isLeaf(c) {
			if bytes.Compare(s.leafKey(c), hi) < 0 {
				return cursor{node, D, p}
			}
			return cursor{node, D, p - 1}
		}
		node, D = c, d+1
	}
}

// scan calls fn on the leaves of query q in its order (ascending: lo <=
// key < hi; descending: the same keys from the largest), at most limit
// (limit <= 0: all), until fn returns false. Cost: a seek, then O(1)
// amortized node steps per leaf.
func (s *store) scan(lo, hi []byte, limit int, desc bool, fn func(l uint64) bool) {
	if s.n == 0 {
		return
	}
	n := 0
	if !desc {
		c := s.seekGE(lo)
		for limit <= 0 || n < limit {
			l := s.next(&c)
			if l == 0 || (hi != nil && bytes.Compare(s.leafKey(l), hi) >= 0) || !fn(l) {
				return
			}
			n++
		}
		return
	}
	c := s.seekLT(hi)
	for limit <= 0 || n < limit {
		l := s.prev(&c)
		if l == 0 || bytes.Compare(s.leafKey(l), lo) < 0 || !fn(l) {
			return
		}
		n++
	}
}

// Query is one range query: the keys with Lo <= key < Hi, Hi nil for no
// upper bound.
type Query struct {
	Lo, Hi []byte
}

// rangeSlotsMax bounds the slots (queries x limit) of the single-walk
// form of a batch of range queries; larger batches, and those without a
// limit, take the two-pass form.
const rangeSlotsMax = 1 << 24

// ranges answers queries over the workers. With a limit and at most
// rangeSlotsMax slots (queries x limit) in one walk per query that keeps
// its leaves in the query's slots, prefix sums, then the pairs copied from
// the slots; otherwise in two passes: count each query's pairs and key
// bytes, prefix sums, then write each query's pairs at its offsets. Cost:
// one scan per query (two without a limit) and a copy of the answers.
func (s *store) ranges(into *Result, qs []Query, limit int, desc bool, workers int) (*Result, error) {
	q := len(qs)
	cnt := make([]int, q+1)
	byt := make([]int, q+1)
	var slots []uint64
	if limit > 0 && q*limit <= rangeSlotsMax {
		slots = make([]uint64, q*limit)
	}
	par.For(q, nodeGrain, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			c, b := 0, 0
			s.scan(qs[i].Lo, qs[i].Hi, limit, desc, func(l uint64) bool {
				if slots != nil {
					slots[i*limit+c] = l
				}
				c++
				b += linkAux(l)
				return true
			})
			cnt[i], byt[i] = c, b
		}
	})
	tc, tb := 0, 0
	for i := range q + 1 {
		cnt[i], tc = tc, tc+cnt[i]
		byt[i], tb = tb, tb+byt[i]
	}
	res, err := sizeResult(into, q, tc, uint64(tb))
	if err != nil {
		return nil, err
	}
	copy(res.Offsets, cnt)
	par.For(q, nodeGrain, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			j, o := cnt[i], byt[i]
			if slots != nil {
				for _, l := range slots[i*limit : i*limit+cnt[i+1]-cnt[i]] {
					res.Keys.Offs[j] = uint32(o)
					o += copy(res.Keys.Data[o:], s.leafKey(l))
					res.Values[j] = s.leafValue(l)
					j++
				}
				continue
			}
			s.scan(qs[i].Lo, qs[i].Hi, limit, desc, func(l uint64) bool {
				k := s.leafKey(l)
				res.Keys.Offs[j] = uint32(o)
				o += copy(res.Keys.Data[o:], k)
				res.Values[j] = s.leafValue(l)
				j++
				return true
			})
		}
	})
	return res, nil
}
