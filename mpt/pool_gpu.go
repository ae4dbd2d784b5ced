package mpt

import "github.com/warpkv/warpkv/gpu"

// The GPU engine's scratch memory: named buffers of one gpu.Pool, reused
// across batches and grown with headroom. Every call reserves the buffers
// it will take before it changes anything (update: batchNeeds, with the
// dirty-list buffers sized to the node capacity so that compress and
// PhaseHC never allocate; reserveNodes: the node ids of a phase), so that
// running out of device memory fails a batch before the trie changes, or,
// inside PhaseNU, where abandon can still compress the trie back. The
// phases then Take their buffers, which allocates nothing.

// Names of the pool's buffers, with their element types and sizes.
const (
	bufKeys     = "keys"     // byte, n*stride: the batch's keys in the stride layout (plain mode)
	bufRaw      = "raw"      // byte, total+8: the raw keys back to back (secure mode)
	bufKoff     = "koff"     // uint32, n+1: offsets of the raw keys (secure mode)
	bufHashed   = "hashed"   // [32]byte, n: the keys' Keccak-256 (secure mode)
	bufLens     = "lens"     // uint32, n: key lengths
	bufVlens    = "vlens"    // uint32, n: value lengths
	bufPerm     = "perm"     // uint32, n: the sort's permutation
	bufL32      = "l32"      // uint32, n: sort keys of the length pass (lengths differ)
	bufW64      = "w64"      // uint64, n: sort keys of one key word
	bufOps      = "ops"      // uint32, n: batch index of each kept operation
	bufKlen     = "klen"     // uint32, m: opState.klen of each kept operation
	bufVid      = "vid"      // uint32, m: opState.vid; the value ids of a lookup
	bufNeed     = "need"     // uint32, m: opState.need
	bufCur      = "cur"      // uint32, m: opState.cur
	bufDep      = "dep"      // uint32, m: opState.dep
	bufPrev     = "prev"     // uint32, m: opState.prev
	bufSt       = "st"       // uint8, m: opState.st
	bufCounts   = "counts"   // uint32, items+1: per-item counts before a scan
	bufOffs     = "offs"     // uint32, items+1: their exclusive offsets
	bufIDs      = "ids"      // uint32, total: node ids of one allocation
	bufExpand   = "expand"   // uint32, m: PhaseNU's expansion list (live while reserveNodes may grow list)
	bufList     = "list"     // uint32, dirty list: compress's compacted list, PhaseHC's next list
	bufStarts   = "starts"   // uint32, dirty list (or proof nodes): start list, proof node ends
	bufFlags    = "flags"    // uint8, max(n, dirty list): select flags
	bufWide     = "wide"     // uint64, n+1: value or proof lengths
	bufWideOffs = "wideOffs" // uint64, n+1: their offsets
	bufOut      = "out"      // byte: gathered values or proofs
)

// keyNeeds are the buffers stageKeys takes for keys laid out as l.
func (g *gpuTrie) keyNeeds(l keyLayout) []gpu.Need {
	if g.secure {
		return []gpu.Need{gpu.NeedOf[byte](bufRaw, l.total+8), gpu.NeedOf[uint32](bufKoff, l.n+1),
			gpu.NeedOf[[32]byte](bufHashed, l.n), gpu.NeedOf[uint32](bufLens, l.n)}
	}
	return []gpu.Need{gpu.NeedOf[byte](bufKeys, l.n*l.stride), gpu.NeedOf[uint32](bufLens, l.n)}
}

// batchNeeds are the buffers an update of keys laid out as l takes: the
// keys', the values' lengths, the sort's, the kept operations' (m <= n),
// the scans' of PhaseNU (at most one item per operation), and the dirty
// list's, sized to the node capacity (the dirty list never holds more).
// Node ids are reserved with the nodes (reserveNodes). Cost: O(1).
func (g *gpuTrie) batchNeeds(l keyLayout) []gpu.Need {
	n := l.n
	needs := append(g.keyNeeds(l),
		gpu.NeedOf[uint32](bufVlens, n), gpu.NeedOf[uint32](bufPerm, n), gpu.NeedOf[uint64](bufW64, n),
		gpu.NeedOf[uint32](bufOps, n), gpu.NeedOf[uint32](bufKlen, n), gpu.NeedOf[uint32](bufVid, n),
		gpu.NeedOf[uint32](bufNeed, n), gpu.NeedOf[uint32](bufCur, n), gpu.NeedOf[uint32](bufDep, n),
		gpu.NeedOf[uint32](bufPrev, n), gpu.NeedOf[uint8](bufSt, n),
		gpu.NeedOf[uint32](bufCounts, n+1), gpu.NeedOf[uint32](bufOffs, n+1),
		gpu.NeedOf[uint32](bufExpand, n), gpu.NeedOf[uint32](bufList, g.capNodes),
		gpu.NeedOf[uint8](bufFlags, max(n, g.capNodes)), gpu.NeedOf[uint32](bufStarts, g.capNodes))
	if l.varied {
		needs = append(needs, gpu.NeedOf[uint32](bufL32, n))
	}
	return needs
}

// dirtyNeeds are the buffers compress and PhaseHC take for a dirty list of
// up to c nodes (the node capacity; dirtyStarts checks them again for the
// list's length). Growing them mid-batch (reserveNodes) frees the old
// ones: no phase holds them across a reserveNodes.
func dirtyNeeds(c int) []gpu.Need {
	return []gpu.Need{gpu.NeedOf[uint32](bufList, c), gpu.NeedOf[uint8](bufFlags, c), gpu.NeedOf[uint32](bufStarts, c)}
}
