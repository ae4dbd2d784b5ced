package btree

import (
	"embed"

	"github.com/warpkv/warpkv/gpu"
)

// kernelFile names the embedded CUDA C source in diagnostics and the
// compile cache; it includes the other .cu files and btree.cuh.
const kernelFile = "btree.cu"

// kernelFS holds btree.cu and the files it includes: the shared header
// btree.cuh and the kernels of one operation each.
//
//go:embed *.cu btree.cuh
var kernelFS embed.FS

// freedShift is the bit of a packed level size (the parents' scanned
// entry counts) where the count of freed parents starts: entry offsets
// below it, freed counts above (FREED_SHIFT in btree.cuh).
const freedShift = 40

// Programs returns the package's kernel program, btree.cu (with the parts
// it includes) with the shared headers and the node layout's constants
// (NIL, the kinds, FREED_SHIFT), for Device.Load and the compile test of
// every kernel. Cost: reads the embedded headers.
func Programs() []gpu.Program {
	return []gpu.Program{gpu.NewProgramFS(kernelFS, "btree", kernelFile,
		gpu.Def("NIL", nilNode), gpu.Def("KIND_FREE", kindFree), gpu.Def("KIND_LEAF", kindLeaf),
		gpu.Def("KIND_INTERNAL", kindInternal), gpu.Def("FREED_SHIFT", freedShift))}
}

// Launch configuration of btree.cu: every kernel is one thread per item
// (key, child, query) with a grid-stride loop, in blocks of kernelBlock
// threads, at most maxBlocks blocks.
const (
	kernelBlock = 256
	maxBlocks   = 1 << 20
)

// lookupChunk is the number of keys of one chunk of a pipelined lookup:
// each chunk's upload, kernel and download are queued on one of two
// streams, alternately, so that one chunk's transfers overlap the other's.
const lookupChunk = stageChunk / 2

// warpLanes is the lanes of a warp (WARP in warpkv/types.cuh).
const warpLanes = 32

// warpGrid returns the grid of a kernel of one warp per item over n items.
func warpGrid(n int) gpu.Dim3 { return grid(n * warpLanes) }

// grid returns the grid of a kernel over n items.
func grid(n int) gpu.Dim3 { return gpu.D1(min(gpu.Grid(n, kernelBlock), maxBlocks)) }

// kernelSet holds the package's kernels on one device.
type kernelSet struct {
	lastFlags, leaves, level, get, rng *gpu.Function
	rngWarp                            *gpu.Function // ranges, one warp per query
	rngStart, rngCopy                  *gpu.Function // ranges in one descent
	rngTotal, rngQout                  *gpu.Function // their chunks' totals and query offsets (pipelined)
	iota, gatherSel, scatterVals       *gpu.Function // build and insert: sort with an index payload

	// Insert, delete and rebuild (insert_gpu.go, delete_gpu.go, propagate_gpu.go).
	locate, leafSizes, mergeNew, stageOld, writeLeaves, writeKept, deleteLeaves *gpu.Function
	maxHi                                                                       *gpu.Function    // the most batch keys of one leaf
	mergeLeaves                                                                 [4]*gpu.Function // the leaves' merge in one pass: bt_merge_leaves_E, E = 1, 2, 4, 8
	unlinkHeads, unlinkMark, unlinkRead, unlinkWrite                            *gpu.Function
	parentOf, parentSizes, stageRepl, stageKeep, writeInternal, levelList       *gpu.Function
	levelTotals, levelsInit, zeroNodes                                          *gpu.Function // parent levels' counts on the device
	nodeCounts, gather                                                          *gpu.Function
}

// loadKernels loads btree.cu on d (compiling through the gpu package's
// cubin cache) and looks up its kernels. Cost: one NVRTC compilation on a
// cache miss.
func loadKernels(d *gpu.Device) (*kernelSet, error) {
	m, err := d.Load(Programs()[0])
	if err != nil {
		return nil, err
	}
	k := &kernelSet{}
	for name, f := range map[string]**gpu.Function{
		"bt_last_flags": &k.lastFlags, "bt_leaves": &k.leaves, "bt_level": &k.level, "bt_get": &k.get,
		"bt_range": &k.rng, "bt_range_warp": &k.rngWarp, "bt_range_start": &k.rngStart, "bt_range_copy": &k.rngCopy, "bt_range_total": &k.rngTotal, "bt_range_qout": &k.rngQout, "bt_locate": &k.locate, "bt_leaf_sizes": &k.leafSizes, "bt_merge_new": &k.mergeNew, "bt_merge_leaves_1": &k.mergeLeaves[0], "bt_merge_leaves_2": &k.mergeLeaves[1],
		"bt_merge_leaves_4": &k.mergeLeaves[2], "bt_merge_leaves_8": &k.mergeLeaves[3], "bt_max_hi": &k.maxHi,
		"bt_stage_old": &k.stageOld, "bt_write_leaves": &k.writeLeaves, "bt_write_kept": &k.writeKept,
		"bt_delete_leaves": &k.deleteLeaves, "bt_unlink_heads": &k.unlinkHeads, "bt_unlink_mark": &k.unlinkMark,
		"bt_unlink_read": &k.unlinkRead, "bt_unlink_write": &k.unlinkWrite, "bt_parent_of": &k.parentOf,
		"bt_parent_sizes": &k.parentSizes, "bt_stage_repl": &k.stageRepl, "bt_stage_keep": &k.stageKeep,
		"bt_write_internal": &k.writeInternal, "bt_level_list": &k.levelList, "bt_node_counts": &k.nodeCounts,
		"bt_gather": &k.gather, "bt_iota": &k.iota, "bt_gather_selected": &k.gatherSel,
		"bt_scatter_values": &k.scatterVals, "bt_level_totals": &k.levelTotals, "bt_levels_init": &k.levelsInit,
		"bt_zero_nodes": &k.zeroNodes,
	} {
		if *f, err = m.Function(name); err != nil {
			return nil, err
		}
	}
	return k, nil
}
