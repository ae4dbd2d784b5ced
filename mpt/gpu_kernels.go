package mpt

import (
	_ "embed"

	"warpkv/gpu"
)

// kernelFile names the embedded CUDA C source in diagnostics and the
// compile cache.
const kernelFile = "mpt.cu"

//go:embed mpt.cu
var kernelSource string

// KernelSources returns the names and CUDA C sources of the package's
// kernel files, for compile checks (no NVRTC options are needed).
func KernelSources() map[string]string { return map[string]string{kernelFile: kernelSource} }

// Launch configuration of mpt.cu, in one place: thread-mapped kernels run
// kernelBlock threads per block, warp-mapped ones (mpt_hash, mpt_gather)
// warpBlock threads (warpBlock/32 warps) per block; every kernel loops
// grid-stride, so grids are capped at maxBlocks. Each constant equals the
// macro named in mpt.cu.
const (
	kernelBlock = 256 // MPT_BLOCK
	warpBlock   = 256 // MPT_WARP_BLOCK
	warpSize    = 32
	maxBlocks   = 1 << 16
)

// Device layout constants, equal to mpt.cu's.
const (
	nodeBytes   = 256 // sizeof(Node)
	valBytes    = 16  // sizeof(Val)
	maxKeyBytes = 128 // MPT_PATH_BYTES: the longest key the GPU engine takes
	ctlWords    = 12  // CTL_WORDS
	kindFree    = 0   // KIND_FREE
	kindBranch  = 1   // KIND_BRANCH
	kindExt     = 2   // KIND_EXT
	kindLeaf    = 3   // KIND_LEAF
	flagDirty   = 1   // FLAG_DIRTY
)

// Control word indices (CTL_* in mpt.cu).
const (
	ctlWait = iota
	ctlNexp
	ctlTouched
	ctlFreed
	ctlStarts
	ctlError
	ctlSelect
	ctlLCP
	ctlRestarts
	ctlNext
	ctlPool
)

// threads returns the grid of a thread-mapped kernel over n items.
func threads(n int) gpu.Dim3 { return gpu.D1(max(1, min(gpu.Grid(n, kernelBlock), maxBlocks))) }

// warps returns the grid of a warp-mapped kernel over n items.
func warps(n int) gpu.Dim3 {
	return gpu.D1(max(1, min(gpu.Grid(n, warpBlock/warpSize), maxBlocks)))
}

// kernelSet holds mpt.cu's kernels on one device.
type kernelSet struct {
	iota, keyLen, keyWord, lastFlags, opInit                *gpu.Function
	walk, expandCount, allocIDs, expand                     *gpu.Function
	insertCount, insert, reclaim                            *gpu.Function
	markUp, countPending, starts, compress, liveFlags, hash *gpu.Function
	lookup, gather, proofSize, proofWrite                   *gpu.Function
	lockInsert, resetVersions, hashLeaves                   *gpu.Function
}

// loadKernels compiles mpt.cu for d (through the gpu package's cubin
// cache) and looks up its kernels. Cost: one NVRTC compilation on a cache
// miss.
func loadKernels(d *gpu.Device) (*kernelSet, error) {
	m, err := d.Compile(kernelFile, kernelSource)
	if err != nil {
		return nil, err
	}
	names := []string{
		"mpt_iota", "mpt_key_len", "mpt_key_word", "mpt_last_flags", "mpt_op_init",
		"mpt_walk", "mpt_expand_count", "mpt_alloc_ids", "mpt_expand",
		"mpt_insert_count", "mpt_insert", "mpt_reclaim",
		"mpt_mark_up", "mpt_count_pending", "mpt_starts", "mpt_compress", "mpt_live_flags", "mpt_hash",
		"mpt_lookup", "mpt_gather", "mpt_proof_size", "mpt_proof_write",
		"mpt_lock_insert", "mpt_reset_versions", "mpt_hash_leaves",
	}
	fs, err := m.Functions(names...)
	if err != nil {
		return nil, err
	}
	return &kernelSet{
		iota: fs[0], keyLen: fs[1], keyWord: fs[2], lastFlags: fs[3], opInit: fs[4],
		walk: fs[5], expandCount: fs[6], allocIDs: fs[7], expand: fs[8],
		insertCount: fs[9], insert: fs[10], reclaim: fs[11],
		markUp: fs[12], countPending: fs[13], starts: fs[14], compress: fs[15], liveFlags: fs[16], hash: fs[17],
		lookup: fs[18], gather: fs[19], proofSize: fs[20], proofWrite: fs[21],
		lockInsert: fs[22], resetVersions: fs[23], hashLeaves: fs[24],
	}, nil
}
