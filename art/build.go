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
	nIt := len(b.it.ref)
	lv := &level{
		b: b, itemSeg: make([]uint32, nIt), flag: make([]uint32, nIt), pieceOf: make([]uint32, nIt),
	}
	for i := range lv.itemSeg {
		lv.itemSeg[i] = noSeg
	}
	for si := range sg.len() {
		for i := sg.start[si]; i < sg.end[si]; i++ {
			lv.itemSeg[i] = uint32(si)
		}
	}
	for sg.len() > 0 {
		lv.sg = sg
		lv.plan()
		lv.pieces()
		lv.count()
		lv.allocate()
		lv.write()
		sg = lv.place()
		lv.close(sg)
	}
}

// level is one round of builder.run: the segments being built (sg) and what
// the steps compute for them, by segment (depth, kind, hasTerm, children,
// rank, arenaOff, segLink) and by item (itemSeg, flag, pieceOf: kept
// across rounds, the items do not change).
type level struct {
	b                      *builder
	sg                     segments
	itemSeg, flag, pieceOf []uint32
	pieceCount             int
	depth                  []uint32
	kind, hasTerm          []uint8 // kind 0: leaf segment
	children, rank         []int
	arenaOff               []uint64
	arenaBase              uint64
	idx                    [numKinds + 1]func(int) uint64
	segLink                []uint64
	nextSeg                []uint32
}

// plan is step 1: a node segment's depth (the LCP of its first and last
// items) and whether its first item ends there (a terminator).
func (lv *level) plan() {
	b, sg, S := lv.b, lv.sg, lv.sg.len()
	lv.depth, lv.kind, lv.hasTerm = make([]uint32, S), make([]uint8, S), make([]uint8, S)
	par.For(S, nodeGrain, b.workers, func(lo, hi int) {
		for si := lo; si < hi; si++ {
			a, e := sg.start[si], sg.end[si]
			if e-a == 1 {
				continue
			}
			ka := b.src.key(b.it.ref[a], b.it.n[a])
			kz := b.src.key(b.it.ref[e-1], b.it.n[e-1])
			d := lcpFrom(ka, kz, int(sg.d[si]))
			lv.depth[si] = uint32(d)
			if len(ka) == d {
				lv.hasTerm[si] = 1
			}
		}
	})
}

// pieces is step 2: flag the items that start a piece, then number the
// pieces (pieceOf, an exclusive scan).
func (lv *level) pieces() {
	b, sg := lv.b, lv.sg
	nIt := len(lv.flag)
	par.For(nIt, keyGrain, b.workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			lv.flag[i] = 0
			si := lv.itemSeg[i]
			if si == noSeg || sg.end[si]-sg.start[si] == 1 {
				continue
			}
			a, d := sg.start[si], int(lv.depth[si])
			switch {
			case uint32(i) == a:
				lv.flag[i] = 1
			case uint32(i) == a+1 && lv.hasTerm[si] == 1:
				lv.flag[i] = 1
			default:
				ki := b.src.key(b.it.ref[i], b.it.n[i])
				kp := b.src.key(b.it.ref[i-1], b.it.n[i-1])
				if ki[d] != kp[d] {
					lv.flag[i] = 1
				}
			}
		}
	})
	P := 0
	for i := range nIt {
		lv.pieceOf[i] = uint32(P) + lv.flag[i] - 1 // the piece holding item i (valid for node-segment items)
		P += int(lv.flag[i])
	}
	lv.pieceCount = P
}

// count is step 3: a node segment's children and the kind that holds them.
func (lv *level) count() {
	sg, S := lv.sg, lv.sg.len()
	lv.children = make([]int, S)
	par.For(S, nodeGrain, lv.b.workers, func(lo, hi int) {
		for si := lo; si < hi; si++ {
			a, e := sg.start[si], sg.end[si]
			if e-a == 1 {
				continue
			}
			c := int(lv.pieceOf[e-1]-lv.pieceOf[a]) + 1 - int(lv.hasTerm[si])
			lv.children[si] = c
			lv.kind[si] = uint8(kindFor(c))
		}
	})
}

// allocate is step 4, in segment order: each new record's rank in its
// kind, the arena offsets of long leaves, then the records and arena
// bytes themselves.
func (lv *level) allocate() {
	b, s, sg, S := lv.b, lv.b.s, lv.sg, lv.sg.len()
	var req [numKinds + 1]int
	lv.rank, lv.arenaOff = make([]int, S), make([]uint64, S)
	var arenaTotal uint64
	for si := range S {
		a := sg.start[si]
		k := int(lv.kind[si])
		if k == 0 {
			if b.it.old[a] != 0 {
				continue
			}
			k = leafKind(int(b.it.n[a]))
			if k == kindLV {
				lv.arenaOff[si] = arenaTotal
				arenaTotal += roundArena(int(b.it.n[a]))
			}
		}
		lv.rank[si] = req[k]
		req[k]++
	}
	for k := kindN4; k <= kindLV; k++ {
		lv.idx[k] = s.alloc(k, req[k])
	}
	lv.arenaBase = s.arenaGrow(arenaTotal)
	s.arenaLive += arenaTotal
}

// write is step 5: each segment's node header or leaf, and its link at
// dst; an old node gets its trim.
func (lv *level) write() {
	b, sg, S := lv.b, lv.sg, lv.sg.len()
	lv.segLink = make([]uint64, S)
	par.For(S, nodeGrain, b.workers, func(lo, hi int) {
		for si := lo; si < hi; si++ {
			a := sg.start[si]
			var l uint64
			switch k := int(lv.kind[si]); {
			case k != 0:
				l = lv.writeNode(si, k)
			case b.it.old[a] != 0:
				l = b.it.old[a]
				if isNode(l) {
					b.trims[b.it.grp[a]] = trim{d: sg.d[si], par: sg.par[si]}
				}
			default:
				l = lv.writeLeaf(si)
			}
			lv.segLink[si] = l
			b.putLink(sg.dst[si], l)
		}
	})
}

// writeNode writes segment si's new node of kind k (its header; the rest
// zero) and returns its link.
func (lv *level) writeNode(si, k int) uint64 {
	b, sg := lv.b, lv.sg
	a := sg.start[si]
	l := link(k, 0, lv.idx[k](lv.rank[si]))
	r := b.s.rec(l)
	clear(r)
	d, D := int(lv.depth[si]), int(sg.d[si])
	key := b.src.key(b.it.ref[a], b.it.n[a])
	r[wMeta] = metaWord(d-D, lv.children[si])
	r[wPrefix] = packPrefix(key[D:d])
	r[wParent] = sg.par[si]
	return l
}

// writeLeaf writes leaf segment si's new leaf (a long key's bytes in the
// arena) and returns its link.
func (lv *level) writeLeaf(si int) uint64 {
	b, s := lv.b, lv.b.s
	a := lv.sg.start[si]
	n := int(b.it.n[a])
	lk := leafKind(n)
	l := link(lk, n, lv.idx[lk](lv.rank[si]))
	key := b.src.key(b.it.ref[a], uint32(n))
	v := b.it.vals[linkIndex(b.it.ref[a])]
	r := s.rec(l)
	if lk == kindLV {
		off := lv.arenaBase + lv.arenaOff[si]
		copy(s.arena[off:off+uint64(n)], key)
		clear(s.arena[off+uint64(n) : off+roundArena(n)])
		r[0], r[1] = v, off|uint64(n)<<linkAuxShift
	} else {
		clear(r)
		copy(wordBytes(r), key)
		r[leafValueWord[lk]] = v
	}
	return l
}

// place is step 6, one per piece: the piece's key byte or index entry in
// its node, and the next round's segment (start, depth, dst, parent).
func (lv *level) place() segments {
	b, sg, P := lv.b, lv.sg, lv.pieceCount
	next := segments{
		start: make([]uint32, P), end: make([]uint32, P), d: make([]uint32, P),
		dst: make([]uint64, P), par: make([]uint64, P),
	}
	lv.nextSeg = make([]uint32, P)
	par.For(len(lv.flag), keyGrain, b.workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if lv.flag[i] == 0 {
				continue
			}
			si := lv.itemSeg[i]
			a := sg.start[si]
			nl := lv.segLink[si]
			k := linkKind(nl)
			r := b.s.rec(nl)
			base := linkIndex(nl) * uint64(kindWords[k])
			d := lv.depth[si]
			p := lv.pieceOf[i]
			next.start[p], lv.nextSeg[p] = uint32(i), si
			if lv.hasTerm[si] == 1 && uint32(i) == a {
				next.d[p], next.dst[p] = d, uint64(k)<<dstShift|(base+wTerm)
				continue
			}
			cr := int(p-lv.pieceOf[a]) - int(lv.hasTerm[si])
			c := int(b.src.key(b.it.ref[i], b.it.n[i])[d])
			w := placeChild(wordBytes(r), k, cr, c)
			next.d[p], next.dst[p], next.par[p] = d+1, uint64(k)<<dstShift|(base+uint64(w)), parentWord(nl, c)
		}
	})
	return next
}

// placeChild writes the key byte c of a node's child of rank cr (N4, N16:
// the key array; N48: the index) and returns the child's word.
func placeChild(bs []byte, k, cr, c int) int {
	switch k {
	case kindN4:
		bs[n4KeyByte+cr] = byte(c)
		return n4Child + cr
	case kindN16:
		bs[n16KeyByte+cr] = byte(c)
		return n16Child + cr
	case kindN48:
		bs[n48IndexByte+c] = byte(cr + 1)
		return n48Child + cr
	}
	return n256Child + c
}

// close is step 7: the next segments' ends, and every item's segment in
// the next round (noSeg once its leaf is written).
func (lv *level) close(next segments) {
	sg, P := lv.sg, lv.pieceCount
	par.For(P, nodeGrain, lv.b.workers, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			if p+1 < P && lv.nextSeg[p+1] == lv.nextSeg[p] {
				next.end[p] = next.start[p+1]
			} else {
				next.end[p] = sg.end[lv.nextSeg[p]]
			}
		}
	})
	par.For(len(lv.itemSeg), keyGrain, lv.b.workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if si := lv.itemSeg[i]; si != noSeg {
				if sg.end[si]-sg.start[si] == 1 {
					lv.itemSeg[i] = noSeg
				} else {
					lv.itemSeg[i] = lv.pieceOf[i]
				}
			}
		}
	})
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
	return buildStoreWidth(kb, vals, order, workers, chooseWidth(len(order), distinctPrefixes(kb, order, workers)))
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
