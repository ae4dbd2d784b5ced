package mpt

import (
	_ "embed"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// The GPU engine's kernels: one program per phase, each a .cu file beside
// the Go file that launches it (sort.cu: sort_gpu.go, update.cu:
// update_gpu.go, lock.cu: lock_gpu.go, compress.cu: compress_gpu.go,
// hash.cu: hash_gpu.go, read.cu: read_gpu.go), sharing the headers
// mpt/mpt.cuh (the node layout and helpers) and mpt/encode.cuh (RLP), with
// the constants below passed as defines.

var (
	//go:embed mpt.cuh
	mptHeader string
	//go:embed encode.cuh
	encodeHeader string
	//go:embed sort.cu
	sortSource string
	//go:embed update.cu
	updateSource string
	//go:embed lock.cu
	lockSource string
	//go:embed compress.cu
	compressSource string
	//go:embed hash.cu
	hashSource string
	//go:embed read.cu
	readSource string
)

// Launch configuration, in one place: thread-mapped kernels run
// kernelBlock threads per block, warp-mapped ones (mpt_hash, mpt_gather)
// warpBlock threads (warpBlock/32 warps) per block; every kernel loops
// grid-stride, so grids are capped at maxBlocks.
const (
	kernelBlock = 256 // MPT_BLOCK
	warpBlock   = 256 // MPT_WARP_BLOCK
	warpSize    = 32  // WARP (warpkv/types.cuh)
	maxBlocks   = 1 << 16
)

// Device layout: node records, value table entries, the longest path.
const (
	nodeBytes   = 256 // MPT_NODE_BYTES: sizeof(Node)
	valBytes    = 16  // MPT_VAL_BYTES: sizeof(Val)
	maxKeyBytes = 128 // MPT_PATH_BYTES: bytes of a node's packed path, the longest key the GPU engine takes
)

// keccakRate is the rate of Ethereum's Keccak-256 in bytes (KECCAK_RATE):
// what PhaseHC absorbs per permutation.
const keccakRate = 136

// keccakUnroll is how many of the 24 Keccak rounds mpt_hash_leaves unrolls
// at a time (MPT_KECCAK_UNROLL; warpkv/keccak.cuh's keccak_f1600<U>).
const keccakUnroll = 1

// Node kinds (a free node, in the free list or never used, is kindFree)
// and flags.
const (
	kindFree   = 0 // KIND_FREE
	kindBranch = 1 // KIND_BRANCH
	kindExt    = 2 // KIND_EXT
	kindLeaf   = 3 // KIND_LEAF
	flagDirty  = 1 // FLAG_DIRTY: in the dirty list of this batch
)

// Byte offsets inside a node record (Node in mpt.cuh, which checks them).
const (
	nodeKindOffset   = 0
	nodeParentOffset = 4
	nodeChildOffset  = 8
	nodeValOffset    = 72
	nodePlenOffset   = 76
	nodeReflenOffset = 80
	nodeFlagsOffset  = 84
	nodePathOffset   = 96
	nodeRefOffset    = 224
)

// Control words (ctl[]), read back by the host between phases.
const (
	ctlWait     = iota // CTL_WAIT: walks that wait for an expansion this round
	ctlNexp            // CTL_NEXP: nodes in the expansion list
	ctlTouched         // CTL_TOUCHED: nodes in the dirty list
	ctlFreed           // CTL_FREED: ids appended to the free list
	ctlStarts          // CTL_STARTS: nodes in the start list
	ctlError           // CTL_ERROR: non-zero when an invariant failed (a bug); the code says which
	ctlSelect          // CTL_SELECT: count output of the host's prim select calls
	ctlLCP             // CTL_LCP: sum over kept operations of their need (decision model)
	ctlRestarts        // CTL_RESTARTS: LockNU walks restarted from the root
	ctlNext            // CTL_NEXT: nodes handed from mpt_hash_leaves to mpt_hash
	ctlPool            // CTL_POOL: ids taken from mpt_insert's pool
	ctlWords    = 12   // CTL_WORDS
)

// defines returns the constants every program is compiled with.
func defines() []gpu.Define {
	return []gpu.Define{
		gpu.Def("MPT_BLOCK", kernelBlock), gpu.Def("MPT_WARP_BLOCK", warpBlock), gpu.Def("KECCAK_RATE", keccakRate), gpu.Def("MPT_KECCAK_UNROLL", keccakUnroll),
		gpu.Def("MPT_PATH_BYTES", maxKeyBytes), gpu.Def("MPT_NODE_BYTES", nodeBytes), gpu.Def("MPT_VAL_BYTES", valBytes),
		gpu.Def("KIND_FREE", kindFree), gpu.Def("KIND_BRANCH", kindBranch), gpu.Def("KIND_EXT", kindExt), gpu.Def("KIND_LEAF", kindLeaf),
		gpu.Def("FLAG_DIRTY", uint32(flagDirty)),
		gpu.Def("MPT_OFF_KIND", nodeKindOffset), gpu.Def("MPT_OFF_PARENT", nodeParentOffset), gpu.Def("MPT_OFF_CHILD", nodeChildOffset),
		gpu.Def("MPT_OFF_VAL", nodeValOffset), gpu.Def("MPT_OFF_PLEN", nodePlenOffset), gpu.Def("MPT_OFF_REFLEN", nodeReflenOffset),
		gpu.Def("MPT_OFF_FLAGS", nodeFlagsOffset), gpu.Def("MPT_OFF_PATH", nodePathOffset), gpu.Def("MPT_OFF_REF", nodeRefOffset),
		gpu.Def("CTL_WAIT", ctlWait), gpu.Def("CTL_NEXP", ctlNexp), gpu.Def("CTL_TOUCHED", ctlTouched), gpu.Def("CTL_FREED", ctlFreed),
		gpu.Def("CTL_STARTS", ctlStarts), gpu.Def("CTL_ERROR", ctlError), gpu.Def("CTL_SELECT", ctlSelect), gpu.Def("CTL_LCP", ctlLCP),
		gpu.Def("CTL_RESTARTS", ctlRestarts), gpu.Def("CTL_NEXT", ctlNext), gpu.Def("CTL_POOL", ctlPool), gpu.Def("CTL_WORDS", ctlWords),
	}
}

// program is one kernel file and the kernels the engine looks up in it.
type program struct {
	name, source string
	kernels      []string
}

// programs lists the kernel files in load order.
var programs = []program{
	{"mpt/sort.cu", sortSource, []string{"mpt_iota", "mpt_key_len", "mpt_key_word", "mpt_last_flags", "mpt_op_init"}},
	{"mpt/update.cu", updateSource, []string{"mpt_walk", "mpt_expand_count", "mpt_alloc_ids", "mpt_expand",
		"mpt_insert_count", "mpt_insert", "mpt_reclaim"}},
	{"mpt/lock.cu", lockSource, []string{"mpt_lock_insert", "mpt_reset_versions"}},
	{"mpt/compress.cu", compressSource, []string{"mpt_mark_up", "mpt_count_pending", "mpt_starts", "mpt_compress", "mpt_live_flags"}},
	{"mpt/hash.cu", hashSource, []string{"mpt_hash_leaves", "mpt_hash"}},
	{"mpt/read.cu", readSource, []string{"mpt_lookup", "mpt_gather", "mpt_proof_size", "mpt_proof_write"}},
}

// program returns p as a gpu.Program: its source with the shared headers,
// mpt's own headers and the defines.
func (p program) program() gpu.Program {
	prog := gpu.NewProgram(p.name, p.source, defines()...)
	prog.Headers["mpt/mpt.cuh"] = mptHeader
	prog.Headers["mpt/encode.cuh"] = encodeHeader
	return prog
}

// Programs returns the GPU engine's kernel programs (for compile checks:
// each compiles with NVRTC on its own). Cost: reads the embedded sources.
func Programs() []gpu.Program {
	out := make([]gpu.Program, len(programs))
	for i, p := range programs {
		out[i] = p.program()
	}
	return out
}

// threads returns the grid of a thread-mapped kernel over n items.
func threads(n int) gpu.Dim3 { return gpu.D1(max(1, min(gpu.Grid(n, kernelBlock), maxBlocks))) }

// warps returns the grid of a warp-mapped kernel over n items.
func warps(n int) gpu.Dim3 {
	return gpu.D1(max(1, min(gpu.Grid(n, warpBlock/warpSize), maxBlocks)))
}

// kernelSet holds the engine's kernels on one device.
type kernelSet struct {
	iota, keyLen, keyWord, lastFlags, opInit                *gpu.Function
	walk, expandCount, allocIDs, expand                     *gpu.Function
	insertCount, insert, reclaim                            *gpu.Function
	markUp, countPending, starts, compress, liveFlags, hash *gpu.Function
	lookup, gather, proofSize, proofWrite                   *gpu.Function
	lockInsert, resetVersions, hashLeaves                   *gpu.Function
}

// loadKernels compiles the programs for d (through the gpu package's
// cubin cache), loads them and looks up their kernels. Cost: one NVRTC
// compilation per program on a cache miss.
func loadKernels(d *gpu.Device) (*kernelSet, error) {
	fs := map[string]*gpu.Function{}
	for _, p := range programs {
		m, err := d.Load(p.program())
		if err != nil {
			return nil, fmt.Errorf("mpt: loading %s: %w", p.name, err)
		}
		got, err := m.Functions(p.kernels...)
		if err != nil {
			return nil, fmt.Errorf("mpt: kernels of %s: %w", p.name, err)
		}
		for i, name := range p.kernels {
			fs[name] = got[i]
		}
	}
	return &kernelSet{
		iota: fs["mpt_iota"], keyLen: fs["mpt_key_len"], keyWord: fs["mpt_key_word"], lastFlags: fs["mpt_last_flags"], opInit: fs["mpt_op_init"],
		walk: fs["mpt_walk"], expandCount: fs["mpt_expand_count"], allocIDs: fs["mpt_alloc_ids"], expand: fs["mpt_expand"],
		insertCount: fs["mpt_insert_count"], insert: fs["mpt_insert"], reclaim: fs["mpt_reclaim"],
		markUp: fs["mpt_mark_up"], countPending: fs["mpt_count_pending"], starts: fs["mpt_starts"], compress: fs["mpt_compress"],
		liveFlags: fs["mpt_live_flags"], hash: fs["mpt_hash"],
		lookup: fs["mpt_lookup"], gather: fs["mpt_gather"], proofSize: fs["mpt_proof_size"], proofWrite: fs["mpt_proof_write"],
		lockInsert: fs["mpt_lock_insert"], resetVersions: fs["mpt_reset_versions"], hashLeaves: fs["mpt_hash_leaves"],
	}, nil
}
