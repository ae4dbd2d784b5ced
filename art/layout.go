package art

import "github.com/warpkv/warpkv/gpu"

// The linear layout shared by the CPU and GPU engines (see the package
// documentation). Every constant here is owned by Go: the kernels get them
// as defines (layoutDefines), never as copies.

// Kinds: the high 4 bits of a link. 1-4 are inner nodes, 5-8 leaves.
const (
	kindEmpty = 0
	kindN4    = 1
	kindN16   = 2
	kindN48   = 3
	kindN256  = 4
	kindL8    = 5 // leaf of a key of 0 to 8 bytes
	kindL16   = 6 // 9 to 16 bytes
	kindL32   = 7 // 17 to 32 bytes
	kindLV    = 8 // longer keys: bytes in the arena
	kindBatch = 14
	kindRoot  = 15 // a parent word whose parent is the root array

	numKinds = 8 // pools: kinds 1..8 are pools 0..7
)

// Link fields: kind<<60 | aux<<40 | index. aux is a leaf's key length, or
// in a parent word the child's byte in its parent.
const (
	linkKindShift = 60
	linkAuxShift  = 40
	linkAuxMask   = 1<<20 - 1
	linkIndexMask = 1<<40 - 1
)

// MaxKeyLen is the longest key, in bytes. The empty key is allowed.
const MaxKeyLen = 1<<16 - 1

// Words (uint64) per record of each kind, by kind; every record is a
// multiple of 16 bytes.
var kindWords = [numKinds + 1]int{0, 8, 22, 84, 260, 2, 4, 6, 2}

// Inner node words. w0 is the meta word: prefix length in bits 0-15,
// children in bits 16-31, and an N4's four key bytes in bits 32-63 (node
// byte 4+i is key i). w1 holds the first prefixStored prefix bytes, w2 the
// terminator leaf (the key that ends at the node), w3 the parent word.
const (
	wMeta   = 0
	wPrefix = 1
	wTerm   = 2
	wParent = 3

	prefixStored = 8

	n4KeyByte    = 4  // byte offset in the node of an N4's key 0
	n4Child      = 4  // word of an N4's child 0
	n16KeyByte   = 32 // byte offset of an N16's key 0 (words 4-5)
	n16Child     = 6  // word of an N16's child 0
	n48IndexByte = 32 // byte offset of an N48's index (words 4-35): byte b -> slot+1, 0 empty
	n48Child     = 36 // word of an N48's child 0
	n256Child    = 4  // word of an N256's child for byte 0
)

// capacity is the most children of each inner kind; minChildren the
// fewest (a node holds the smallest kind its children fit).
var (
	capacity    = [5]int{0, 4, 16, 48, 256}
	minChildren = [5]int{0, 1, 5, 17, 49}
)

// Leaf words: L8, L16 and L32 hold the key bytes (zero padded) from word 0
// and the value in leafValueWord; an LV leaf holds the value in word 0 and
// its key's place in the arena in word 1 (byte offset | length<<40, or
// lvDead once freed).
var leafValueWord = [numKinds + 1]int{kindL8: 1, kindL16: 2, kindL32: 4, kindLV: 0}

const (
	lvDead       = ^uint64(0)
	arenaGranule = 8 // arena allocations are rounded up to this
)

// Slot codes order a node's entries: the terminator first, then the child
// bytes; a trim (a new prefix for the node) sorts last.
const (
	slotTerm = -1
	codeTrim = 257
)

// Root array: 256^W table entries for keys of W bytes or more, then the
// short slots, one per key shorter than W bytes: length l starts at
// shortOffset(l) after the table.
const maxWidth = 3

// link returns a link of kind k to index i with aux field a.
func link(k int, a int, i uint64) uint64 {
	return uint64(k)<<linkKindShift | uint64(a)<<linkAuxShift | i
}

func linkKind(l uint64) int     { return int(l >> linkKindShift) }
func linkAux(l uint64) int      { return int(l>>linkAuxShift) & linkAuxMask }
func linkIndex(l uint64) uint64 { return l & linkIndexMask }
func isLeaf(l uint64) bool      { k := linkKind(l); return k >= kindL8 && k <= kindLV }
func isNode(l uint64) bool      { k := linkKind(l); return k >= kindN4 && k <= kindN256 }

// nodeID strips a link to its kind and index (the aux field cleared).
func nodeID(l uint64) uint64 { return l &^ (uint64(linkAuxMask) << linkAuxShift) }

// parentWord is the parent word of a child at byte b of node p.
func parentWord(p uint64, b int) uint64 { return nodeID(p) | uint64(b)<<linkAuxShift }

// rootParent is the parent word of a child of root slot s.
func rootParent(s uint64) uint64 { return link(kindRoot, 0, s) }

// leafKind is the leaf class of a key of n bytes.
func leafKind(n int) int {
	switch {
	case n <= 8:
		return kindL8
	case n <= 16:
		return kindL16
	case n <= 32:
		return kindL32
	}
	return kindLV
}

// kindFor is the inner kind that holds c children (c >= 1).
func kindFor(c int) int {
	switch {
	case c <= 4:
		return kindN4
	case c <= 16:
		return kindN16
	case c <= 48:
		return kindN48
	}
	return kindN256
}

// tableLen is the number of table entries of width w; shortLen the number
// of short slots; rootLen both.
func tableLen(w int) int { return 1 << (8 * w) }
func shortLen(w int) int { return (tableLen(w) - 1) / 255 }
func rootLen(w int) int  { return tableLen(w) + shortLen(w) }

// shortOffset is the first short slot (after the table) of keys of l bytes.
func shortOffset(l int) int { return (tableLen(l) - 1) / 255 }

// roundArena rounds an arena allocation up to the granule.
func roundArena(n int) uint64 { return uint64(n+arenaGranule-1) &^ (arenaGranule - 1) }

// layoutDefines are the layout constants for the kernels.
func layoutDefines() []gpu.Define {
	return []gpu.Define{
		gpu.Def("K_N4", kindN4), gpu.Def("K_N16", kindN16), gpu.Def("K_N48", kindN48), gpu.Def("K_N256", kindN256),
		gpu.Def("K_L8", kindL8), gpu.Def("K_L16", kindL16), gpu.Def("K_L32", kindL32), gpu.Def("K_LV", kindLV),
		gpu.Def("K_BATCH", kindBatch), gpu.Def("K_ROOT", kindRoot),
		gpu.Def("KIND_SHIFT", linkKindShift), gpu.Def("AUX_SHIFT", linkAuxShift),
		gpu.Def("AUX_MASK", uint64(linkAuxMask)), gpu.Def("INDEX_MASK", uint64(linkIndexMask)),
		gpu.Def("W_N4", kindWords[kindN4]), gpu.Def("W_N16", kindWords[kindN16]),
		gpu.Def("W_N48", kindWords[kindN48]), gpu.Def("W_N256", kindWords[kindN256]),
		gpu.Def("W_L8", kindWords[kindL8]), gpu.Def("W_L16", kindWords[kindL16]),
		gpu.Def("W_L32", kindWords[kindL32]), gpu.Def("W_LV", kindWords[kindLV]),
		gpu.Def("PREFIX_STORED", prefixStored),
		gpu.Def("N4_KEYB", n4KeyByte), gpu.Def("N4_CHILD", n4Child),
		gpu.Def("N16_KEYB", n16KeyByte), gpu.Def("N16_CHILD", n16Child),
		gpu.Def("N48_INDEXB", n48IndexByte), gpu.Def("N48_CHILD", n48Child), gpu.Def("N256_CHILD", n256Child),
		gpu.Def("CAP_N4", capacity[kindN4]), gpu.Def("CAP_N16", capacity[kindN16]), gpu.Def("CAP_N48", capacity[kindN48]),
		gpu.Def("CAP_N256", capacity[kindN256]),
		gpu.Def("LV_DEAD", lvDead), gpu.Def("ARENA_GRANULE", arenaGranule),
		gpu.Def("CODE_TRIM", codeTrim), gpu.Def("MAX_WIDTH", maxWidth),
	}
}
