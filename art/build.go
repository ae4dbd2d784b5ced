package art

import "github.com/warpkv/warpkv/internal/par"

// The round-based build: subtrees made from sorted runs of keys
// (segments), one node level per round, in the same phases on both
// engines (the GPU engine's art.cu kernels ab_* follow the steps below).
// Build makes the whole tree this way; Insert makes the subtrees of its
// groups this way.

// Destinations: where a segment's link is written. A dst word is
// code<<dstShift | index.
const (
	dstShift = 56
	dstNode  = 0  // codes 1..4: word index in the pool of that kind
	dstRoot  = 9  // root slot
	dstGroup = 10 // an insert group's link
	noSeg    = ^uint32(0)
)

// items are the sorted keys a build makes leaves of, structure of arrays:
// ref is where the key bytes are (kindBatch|batch position, or a leaf
// link), n the key's length (for an old node, the length of its path), old
// the old leaf or node the item stands for (0: a batch key, which gets a
// new leaf), grp the insert group (for old nodes' trims).
type items struct {
	ref  []uint64
	n    []uint32
	old  []uint64
	grp  []uint32
	vals []uint64 // values by batch position
}

// segments are the runs of items that become one subtree each: items
// [start, end), base depth d (bytes consumed above), dst where its link
// goes, par the parent word of its root node.
type segments struct {
	start, end []uint32
	d          []uint32
	dst        []uint64
	par        []uint64
}

func (sg *segments) len() int { return len(sg.start) }

// trim records where an old node landed in an insert's build: its new base
// depth and parent word (its prefix shrinks to n - d bytes).
type trim struct {
	d   uint32
	par uint64
}

// keySrc resolves key references: batch positions into the batch, leaf
// links into the tree.
type keySrc struct {
	s *store
	b Keys
}

func (ks *keySrc) key(ref uint64, n uint32) []byte {
	if linkKind(ref) == kindBatch {
		i := linkIndex(ref)
		a := ks.b.Offs[i]
		return ks.b.Data[a : a+n : a+n]
	}
	return ks.s.leafKey(ref)[:n:n]
}

// lcpFrom returns the length of the common prefix of a and b, knowing the
// first from bytes are equal.
func lcpFrom(a, b []byte, from int) int {
	m := min(len(a), len(b))
	i := from
	for i+8 <= m && le64(a[i:]) == le64(b[i:]) {
		i += 8
	}
	for i < m && a[i] == b[i] {
		i++
	}
	return i
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// builder runs the build rounds over one store.
type builder struct {
	s         *store
	src       keySrc
	it        items
	workers   int
	groupLink []uint64 // insert: the link of each group's subtree
	trims     []trim   // insert: by group, where the group's old node landed
}

// putLink writes l at destination dst.
func (b *builder) putLink(dst uint64, l uint64) {
	i := dst & (1<<dstShift - 1)
	switch c := int(dst >> dstShift); c {
	case dstRoot:
		b.s.root[i] = l
	case dstGroup:
		b.groupLink[i] = l
	default:
		b.s.pools[c].words[i] = l
	}
}

// run builds a subtree for every segment, one level per round:
//
//  1. plan, one per segment: a single item is a leaf segment; otherwise the
//     node's depth d is the common prefix length of its first and last
//     items (the run is sorted);
//  2. pieces, one per item of a node segment: an item starts a piece when
//     it is the segment's first, follows a terminator (an item of length
//     d, necessarily the first), or has another byte at d than the item
//     before; an exclusive scan numbers the pieces;
//  3. count, one per node segment: children = pieces minus the
//     terminator, and the kind that holds them;
//  4. allocate, in segment order: nodes per kind, new leaves per class, and
//     arena bytes for long keys (exclusive scans on the GPU);
//  5. write, one per segment: a node's header (prefix length and bytes,
//     children, parent word; the rest zero) or a leaf, and its link at dst;
//     an old node gets its trim;
//  6. place, one per piece: the piece's key byte (N4, N16) or index entry
//     (N48), and the next round's segment: the piece's items, base depth
//     d+1, dst the child word (or the terminator word);
//  7. close, one per next segment: its end.
//
// Cost per round: O(items + segments) over the workers, plus the LCPs.
func (b *builder) run(sg segments) {
	s := b.s
	nIt := len(b.it.ref)
	itemSeg := make([]uint32, nIt)
	for i := range itemSeg {
		itemSeg[i] = noSeg
	}
	for si := range sg.len() {
		for i := sg.start[si]; i < sg.end[si]; i++ {
			itemSeg[i] = uint32(si)
		}
	}
	flag := make([]uint32, nIt)
	pieceOf := make([]uint32, nIt)
	for sg.len() > 0 {
		S := sg.len()
		depth := make([]uint32, S)
		kind := make([]uint8, S) // 0: leaf segment
		hasTerm := make([]uint8, S)
		// 1. plan
		par.For(S, nodeGrain, b.workers, func(lo, hi int) {
			for si := lo; si < hi; si++ {
				a, e := sg.start[si], sg.end[si]
				if e-a == 1 {
					continue
				}
				ka := b.src.key(b.it.ref[a], b.it.n[a])
				kz := b.src.key(b.it.ref[e-1], b.it.n[e-1])
				d := lcpFrom(ka, kz, int(sg.d[si]))
				depth[si] = uint32(d)
				if len(ka) == d {
					hasTerm[si] = 1
				}
			}
		})
		// 2. pieces
		par.For(nIt, keyGrain, b.workers, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				flag[i] = 0
				si := itemSeg[i]
				if si == noSeg || sg.end[si]-sg.start[si] == 1 {
					continue
				}
				a, d := sg.start[si], int(depth[si])
				switch {
				case uint32(i) == a:
					flag[i] = 1
				case uint32(i) == a+1 && hasTerm[si] == 1:
					flag[i] = 1
				default:
					ki := b.src.key(b.it.ref[i], b.it.n[i])
					kp := b.src.key(b.it.ref[i-1], b.it.n[i-1])
					if ki[d] != kp[d] {
						flag[i] = 1
					}
				}
			}
		})
		P := 0
		for i := range nIt {
			pieceOf[i] = uint32(P) + flag[i] - 1 // the piece holding item i (valid for node-segment items)
			P += int(flag[i])
		}
		// 3. count
		children := make([]int, S)
		par.For(S, nodeGrain, b.workers, func(lo, hi int) {
			for si := lo; si < hi; si++ {
				a, e := sg.start[si], sg.end[si]
				if e-a == 1 {
					continue
				}
				c := int(pieceOf[e-1]-pieceOf[a]) + 1 - int(hasTerm[si])
				children[si] = c
				kind[si] = uint8(kindFor(c))
			}
		})
		// 4. allocate, in segment order
		var req [numKinds + 1]int
		rank := make([]int, S)
		arenaOff := make([]uint64, S)
		var arenaTotal uint64
		for si := range S {
			a := sg.start[si]
			k := int(kind[si])
			if k == 0 {
				if b.it.old[a] != 0 {
					continue
				}
				k = leafKind(int(b.it.n[a]))
				if k == kindLV {
					arenaOff[si] = arenaTotal
					arenaTotal += roundArena(int(b.it.n[a]))
				}
			}
			rank[si] = req[k]
			req[k]++
		}
		var idx [numKinds + 1]func(int) uint64
		for k := kindN4; k <= kindLV; k++ {
			idx[k] = s.alloc(k, req[k])
		}
		arenaBase := s.arenaGrow(arenaTotal)
		s.arenaLive += arenaTotal
		segLink := make([]uint64, S)
		// 5. write
		par.For(S, nodeGrain, b.workers, func(lo, hi int) {
			for si := lo; si < hi; si++ {
				a := sg.start[si]
				var l uint64
				switch k := int(kind[si]); {
				case k != 0:
					l = link(k, 0, idx[k](rank[si]))
					r := s.rec(l)
					clear(r)
					d, D := int(depth[si]), int(sg.d[si])
					key := b.src.key(b.it.ref[a], b.it.n[a])
					r[wMeta] = metaWord(d-D, children[si])
					r[wPrefix] = packPrefix(key[D:d])
					r[wParent] = sg.par[si]
				case b.it.old[a] != 0:
					l = b.it.old[a]
					if isNode(l) {
						b.trims[b.it.grp[a]] = trim{d: sg.d[si], par: sg.par[si]}
					}
				default:
					n := int(b.it.n[a])
					lk := leafKind(n)
					l = link(lk, n, idx[lk](rank[si]))
					key := b.src.key(b.it.ref[a], uint32(n))
					v := b.it.vals[linkIndex(b.it.ref[a])]
					r := s.rec(l)
					if lk == kindLV {
						off := arenaBase + arenaOff[si]
						copy(s.arena[off:off+uint64(n)], key)
						clear(s.arena[off+uint64(n) : off+roundArena(n)])
						r[0], r[1] = v, off|uint64(n)<<linkAuxShift
					} else {
						clear(r)
						copy(wordBytes(r), key)
						r[leafValueWord[lk]] = v
					}
				}
				segLink[si] = l
				b.putLink(sg.dst[si], l)
			}
		})
		// 6. place
		next := segments{
			start: make([]uint32, P), end: make([]uint32, P), d: make([]uint32, P),
			dst: make([]uint64, P), par: make([]uint64, P),
		}
		nextSeg := make([]uint32, P)
		par.For(nIt, keyGrain, b.workers, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if flag[i] == 0 {
					continue
				}
				si := itemSeg[i]
				a := sg.start[si]
				nl := segLink[si]
				k := linkKind(nl)
				r := s.rec(nl)
				base := linkIndex(nl) * uint64(kindWords[k])
				d := depth[si]
				p := pieceOf[i]
				next.start[p], nextSeg[p] = uint32(i), si
				if hasTerm[si] == 1 && uint32(i) == a {
					next.d[p], next.dst[p] = d, uint64(k)<<dstShift|(base+wTerm)
					continue
				}
				cr := int(p-pieceOf[a]) - int(hasTerm[si])
				c := int(b.src.key(b.it.ref[i], b.it.n[i])[d])
				bs := wordBytes(r)
				var w int
				switch k {
				case kindN4:
					bs[n4KeyByte+cr] = byte(c)
					w = n4Child + cr
				case kindN16:
					bs[n16KeyByte+cr] = byte(c)
					w = n16Child + cr
				case kindN48:
					bs[n48IndexByte+c] = byte(cr + 1)
					w = n48Child + cr
				default:
					w = n256Child + c
				}
				next.d[p], next.dst[p], next.par[p] = d+1, uint64(k)<<dstShift|(base+uint64(w)), parentWord(nl, c)
			}
		})
		// 7. close
		par.For(P, nodeGrain, b.workers, func(lo, hi int) {
			for p := lo; p < hi; p++ {
				if p+1 < P && nextSeg[p+1] == nextSeg[p] {
					next.end[p] = next.start[p+1]
				} else {
					next.end[p] = sg.end[nextSeg[p]]
				}
			}
		})
		par.For(nIt, keyGrain, b.workers, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if si := itemSeg[i]; si != noSeg {
					if sg.end[si]-sg.start[si] == 1 {
						itemSeg[i] = noSeg
					} else {
						itemSeg[i] = pieceOf[i]
					}
				}
			}
		})
		sg = next
	}
}

// Root width choice. A table of width w replaces the top w levels of the
// tree by one read; it pays when the tree has enough keys and their first
// w bytes spread over enough of its 256^w entries (iteration walks the
// entries in order, so a sparse table slows ranges, and an empty entry
// costs 8 bytes). Measured on the CPU engine (BenchmarkLookupWidth, 16-byte
// random keys, 2 cores): 4Ki keys 28/39/61/47 M lookups/s at widths
// 0/1/2/3, 64Ki keys 41/41/64/29, 1Mi keys 2.9/3.1/3.7/5.3: width 2 from
// 4Ki keys, 3 from 1Mi.
var widthMinKeys = [maxWidth + 1]int{0, 256, 1 << 12, 1 << 20}

// widthMinFill is the least fraction, 1/widthMinFill, of table entries
// that distinct key prefixes must fill (random keys fill 1/16 of a width-3
// table at 1Mi keys; English words under 1/100 of a width-2 one).
const widthMinFill = 32

// chooseWidth picks the root width for n distinct keys with distinct[w]
// distinct w-byte prefixes.
func chooseWidth(n int, distinct [maxWidth + 1]int) int {
	w := 0
	for c := 1; c <= maxWidth; c++ {
		if n >= widthMinKeys[c] && distinct[c]*widthMinFill >= tableLen(c) {
			w = c
		}
	}
	return w
}

// rootSegments groups sorted distinct batch keys by root slot: one segment
// per slot, at base depth w (a short key's segment is its leaf), written to
// the root slot.
func rootSegments(kb Keys, order []uint32, w int) segments {
	var sg segments
	for i := 0; i < len(order); {
		slot := rootSlot(kb.At(int(order[i])), w)
		j := i + 1
		for j < len(order) && rootSlot(kb.At(int(order[j])), w) == slot {
			j++
		}
		d := w
		if n := len(kb.At(int(order[i]))); n < w {
			d = n
		}
		sg.start = append(sg.start, uint32(i))
		sg.end = append(sg.end, uint32(j))
		sg.d = append(sg.d, uint32(d))
		sg.dst = append(sg.dst, uint64(dstRoot)<<dstShift|slot)
		sg.par = append(sg.par, rootParent(slot))
		i = j
	}
	return sg
}

// buildStore returns a new tree of the sorted distinct batch keys order of
// kb with values by batch position. Cost: the rounds, O(keys * depth).
func buildStore(kb Keys, vals []uint64, order []uint32, workers int) *store {
	return buildStoreWidth(kb, vals, order, workers, chooseWidth(len(order), distinctPrefixes(kb, order)))
}

// buildStoreWidth is buildStore with root width w.
func buildStoreWidth(kb Keys, vals []uint64, order []uint32, workers int, w int) *store {
	s := newStore(w)
	it := items{
		ref: make([]uint64, len(order)), n: make([]uint32, len(order)), old: make([]uint64, len(order)),
		grp: make([]uint32, len(order)), vals: vals,
	}
	for i, p := range order {
		it.ref[i] = link(kindBatch, 0, uint64(p))
		it.n[i] = kb.Offs[p+1] - kb.Offs[p]
	}
	b := &builder{s: s, src: keySrc{s: s, b: kb}, it: it, workers: workers}
	b.run(rootSegments(kb, order, w))
	s.n = len(order)
	return s
}
