package art

import (
	"encoding/binary"
	"unsafe"
)

// pool is the record buffer of one kind: record i owns words
// [i*w, (i+1)*w) where w = kindWords[kind]. Records below hwm are in use
// or free; free holds the free ones as a stack (the top is the end).
type pool struct {
	words []uint64
	hwm   uint64
	free  []uint32
}

// store is the CPU engine's tree: one pool per kind, the arena of long
// keys, the root array and the counters. Every slice is pointer-free. The
// GPU engine keeps the same arrays in device memory and downloads them into
// a store for checks and comparisons (snapshot).
type store struct {
	pools     [numKinds + 1]pool     // by kind; pools[0] unused
	arena     []byte                 // long keys; len is the bytes allocated
	arenaLive uint64                 // bytes of live LV leaves (rounded)
	width     int                    // root table width W in bytes
	root      []uint64               // rootLen(width) links
	n         int                    // keys
	pending   [numKinds + 1][]uint32 // records freed by the batch in progress, pushed at its end
}

// newStore returns an empty tree with root width w.
func newStore(w int) *store {
	return &store{width: w, root: make([]uint64, rootLen(w))}
}

// rec returns the words of the record of link l.
func (s *store) rec(l uint64) []uint64 {
	k := linkKind(l)
	w := uint64(kindWords[k])
	i := linkIndex(l)
	return s.pools[k].words[i*w : (i+1)*w : (i+1)*w]
}

// recBytes returns the bytes of the record of link l.
func (s *store) recBytes(l uint64) []byte { return wordBytes(s.rec(l)) }

// wordBytes views words as bytes (little-endian hosts, as the GPU).
func wordBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}

// leafKey returns the key of leaf l (a view into the tree).
func (s *store) leafKey(l uint64) []byte {
	n := linkAux(l)
	if linkKind(l) == kindLV {
		w := s.rec(l)[1]
		off := w & linkIndexMask
		return s.arena[off : off+uint64(n) : off+uint64(n)]
	}
	return s.recBytes(l)[:n:n]
}

// leafValue and setLeafValue read and write the value of leaf l.
func (s *store) leafValue(l uint64) uint64 { return s.rec(l)[leafValueWord[linkKind(l)]] }
func (s *store) setLeafValue(l uint64, v uint64) {
	s.rec(l)[leafValueWord[linkKind(l)]] = v
}

// Node header accessors.
func plenOf(r []uint64) int           { return int(r[wMeta] & 0xffff) }
func countOf(r []uint64) int          { return int(r[wMeta] >> 16 & 0xffff) }
func metaWord(plen, count int) uint64 { return uint64(plen) | uint64(count)<<16 }

// childAt returns the link at position p of node record r of kind k:
// p = -1 is the terminator; 0..count-1 the children of N4, N16 and N48 in
// byte order; 0..255 the byte of an N256. The second result is the word
// holding it.
func childAt(r []uint64, k int, p int) (uint64, int) {
	if p < 0 {
		return r[wTerm], wTerm
	}
	var w int
	switch k {
	case kindN4:
		w = n4Child + p
	case kindN16:
		w = n16Child + p
	case kindN48:
		w = n48Child + p
	default:
		w = n256Child + p
	}
	return r[w], w
}

// byteAt returns the byte of the child at position p (p >= 0) of a node.
func byteAt(r []uint64, k int, p int) int {
	b := wordBytes(r)
	switch k {
	case kindN4:
		return int(b[n4KeyByte+p])
	case kindN16:
		return int(b[n16KeyByte+p])
	case kindN48:
		idx := b[n48IndexByte : n48IndexByte+256]
		for c := range 256 {
			if int(idx[c]) == p+1 {
				return c
			}
		}
		return -1
	}
	return p
}

// positions is one past the last child position of a node: its children
// for N4, N16 and N48, 256 for an N256.
func positions(r []uint64, k int) int {
	if k == kindN256 {
		return 256
	}
	return countOf(r)
}

// lowerPos returns the position of the first child with a byte >= b, and
// whether that child's byte is b.
func lowerPos(r []uint64, k int, b int) (int, bool) {
	bs := wordBytes(r)
	switch k {
	case kindN4, kindN16:
		off := n4KeyByte
		if k == kindN16 {
			off = n16KeyByte
		}
		c := countOf(r)
		for i := range c {
			if int(bs[off+i]) >= b {
				return i, int(bs[off+i]) == b
			}
		}
		return c, false
	case kindN48:
		idx := bs[n48IndexByte : n48IndexByte+256]
		if idx[b] != 0 {
			return int(idx[b]) - 1, true
		}
		p := 0
		for c := range b {
			if idx[c] != 0 {
				p++
			}
		}
		return p, false
	}
	return b, r[n256Child+b] != 0
}

// findChild returns the child of node record r (kind k) at byte b, or 0,
// and the word holding it (-1 when absent).
func findChild(r []uint64, k int, b int) (uint64, int) {
	bs := wordBytes(r)
	switch k {
	case kindN4:
		c := countOf(r)
		for i := range c {
			if int(bs[n4KeyByte+i]) == b {
				return r[n4Child+i], n4Child + i
			}
		}
		return 0, -1
	case kindN16:
		c := countOf(r)
		for i := range c {
			if int(bs[n16KeyByte+i]) == b {
				return r[n16Child+i], n16Child + i
			}
		}
		return 0, -1
	case kindN48:
		s := bs[n48IndexByte+b]
		if s == 0 {
			return 0, -1
		}
		return r[n48Child+int(s)-1], n48Child + int(s) - 1
	}
	if r[n256Child+b] == 0 {
		return 0, -1
	}
	return r[n256Child+b], n256Child + b
}

// prefixBytes returns the stored prefix bytes of a node (at most
// prefixStored).
func prefixBytes(r []uint64) []byte {
	n := min(plenOf(r), prefixStored)
	return wordBytes(r[wPrefix : wPrefix+1])[:n]
}

// packPrefix packs up to prefixStored bytes into a prefix word.
func packPrefix(p []byte) uint64 {
	var b [8]byte
	copy(b[:], p[:min(len(p), prefixStored)])
	return binary.LittleEndian.Uint64(b[:])
}

// minLeaf returns the smallest leaf under node link l: the terminator, else
// the first child, down to a leaf.
func (s *store) minLeaf(l uint64) uint64 {
	for isNode(l) {
		r := s.rec(l)
		k := linkKind(l)
		if r[wTerm] != 0 {
			return r[wTerm]
		}
		if k == kindN256 {
			for b := range 256 {
				if c := r[n256Child+b]; c != 0 {
					l = c
					break
				}
			}
		} else {
			l, _ = childAt(r, k, 0)
		}
	}
	return l
}

// rootSlot returns the root slot of key k in a tree of width w.
func rootSlot(k []byte, w int) uint64 {
	if len(k) >= w {
		return beUint(k[:w])
	}
	return uint64(tableLen(w)+shortOffset(len(k))) + beUint(k)
}

// beUint reads up to 8 bytes big-endian.
func beUint(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// alloc hands out r allocations of kind k for one step: the top of the
// free stack first, then new records past hwm. It returns the function
// giving the index of allocation i (0 <= i < r) and grows the pool. Cost:
// O(1), plus the growth.
func (s *store) alloc(k int, r int) func(i int) uint64 {
	p := &s.pools[k]
	top := len(p.free)
	hwm := p.hwm
	fresh := max(0, r-top)
	stack := p.free
	idx := func(i int) uint64 {
		if i < top {
			return uint64(stack[top-1-i])
		}
		return hwm + uint64(i-top)
	}
	p.free = p.free[:max(0, top-r)]
	p.hwm += uint64(fresh)
	need := int(p.hwm) * kindWords[k]
	if need > len(p.words) {
		if need > cap(p.words) {
			nw := make([]uint64, need, need+need/2+64)
			copy(nw, p.words)
			p.words = nw
		} else {
			p.words = p.words[:need]
		}
	}
	return idx
}

// arenaAlloc appends n bytes (rounded) to the arena and returns their
// offset.
func (s *store) arenaGrow(total uint64) uint64 {
	off := uint64(len(s.arena))
	need := off + total
	if need > uint64(cap(s.arena)) {
		na := make([]byte, need, need+need/2+64)
		copy(na, s.arena)
		s.arena = na
	} else {
		s.arena = s.arena[:need]
	}
	return off
}

// freeRecords pushes freed record indices of kind k on its stack, in order.
func (s *store) freeRecords(k int, ids []uint32) {
	s.pools[k].free = append(s.pools[k].free, ids...)
}

// flushFrees pushes the batch's freed records on the free stacks, per kind
// in the order they were freed (the GPU engine pushes the same order).
func (s *store) flushFrees() {
	for k := range s.pending {
		s.freeRecords(k, s.pending[k])
		s.pending[k] = s.pending[k][:0]
	}
}

// freeLeaf frees leaf l at the end of the batch; an LV leaf is marked dead
// and its arena bytes no longer count as live.
func (s *store) freeLeaf(l uint64) {
	k := linkKind(l)
	if k == kindLV {
		s.rec(l)[1] = lvDead
		s.arenaLive -= roundArena(linkAux(l))
	}
	s.pending[k] = append(s.pending[k], uint32(linkIndex(l)))
}
