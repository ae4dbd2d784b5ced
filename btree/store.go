package btree

import "fmt"

// Storage geometry and node kinds.
const (
	segShift = 10
	segNodes = 1 << segShift // nodes per segment
	segMask  = segNodes - 1
	nilNode  = ^uint32(0) // no node
	maxNodes = int(nilNode) - segNodes

	kindFree     uint8 = 0
	kindLeaf     uint8 = 1
	kindInternal uint8 = 2
)

// segment holds segNodes nodes. Node o of the segment owns
// keys[o*order:(o+1)*order] and slots[o*order:(o+1)*order] (values in a
// leaf, child node ids in an internal node) and element o of the other
// arrays. Every array is pointer-free.
type segment struct {
	keys   []uint64
	slots  []uint64
	count  []uint32
	parent []uint32
	next   []uint32 // leaves: the next leaf in key order
	prev   []uint32 // leaves: the previous leaf in key order
	kind   []uint8
}

// store is the node array, grown by whole segments.
type store struct {
	order int
	segs  []segment
	n     int // allocated nodes: ids 0 to n-1
}

// reset drops every node. Cost: O(1).
func (s *store) reset() { s.segs, s.n = nil, 0 }

// grow allocates k contiguous new nodes (kind free, zero count) and returns
// the first id. Not safe for concurrent use. Cost: O(k*order) for the new
// segments.
func (s *store) grow(k int) (uint32, error) {
	if k < 0 || s.n+k > maxNodes {
		return 0, fmt.Errorf("btree: grow by %d nodes: at most %d nodes", k, maxNodes)
	}
	first := uint32(s.n)
	s.n += k
	for len(s.segs)*segNodes < s.n {
		m := s.order
		s.segs = append(s.segs, segment{
			keys:   make([]uint64, segNodes*m),
			slots:  make([]uint64, segNodes*m),
			count:  make([]uint32, segNodes),
			parent: make([]uint32, segNodes),
			next:   make([]uint32, segNodes),
			prev:   make([]uint32, segNodes),
			kind:   make([]uint8, segNodes),
		})
	}
	return first, nil
}

// seg returns the segment of node id and its offset there.
func (s *store) seg(id uint32) (*segment, int) {
	return &s.segs[id>>segShift], int(id & segMask)
}

// keys returns the order key slots of node id.
func (s *store) keys(id uint32) []uint64 {
	g, o := s.seg(id)
	m := s.order
	return g.keys[o*m : o*m+m : o*m+m]
}

// slots returns the order child/record slots of node id.
func (s *store) slots(id uint32) []uint64 {
	g, o := s.seg(id)
	m := s.order
	return g.slots[o*m : o*m+m : o*m+m]
}

func (s *store) count(id uint32) int { g, o := s.seg(id); return int(g.count[o]) }
func (s *store) setCount(id uint32, c int) {
	g, o := s.seg(id)
	g.count[o] = uint32(c)
}
func (s *store) kind(id uint32) uint8          { g, o := s.seg(id); return g.kind[o] }
func (s *store) setKind(id uint32, k uint8)    { g, o := s.seg(id); g.kind[o] = k }
func (s *store) parent(id uint32) uint32       { g, o := s.seg(id); return g.parent[o] }
func (s *store) setParent(id uint32, p uint32) { g, o := s.seg(id); g.parent[o] = p }
func (s *store) next(id uint32) uint32         { g, o := s.seg(id); return g.next[o] }
func (s *store) setNext(id uint32, n uint32)   { g, o := s.seg(id); g.next[o] = n }
func (s *store) prev(id uint32) uint32         { g, o := s.seg(id); return g.prev[o] }
func (s *store) setPrev(id uint32, p uint32)   { g, o := s.seg(id); g.prev[o] = p }

// maxKey returns the largest key of a non-empty node.
func (s *store) maxKey(id uint32) uint64 { return s.keys(id)[s.count(id)-1] }
