package art

import (
	"embed"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// kernelFS holds art.cu, the program's main file, and its parts: art.cuh
// (the layout and shared helpers) and one .cu per operation group, which
// art.cu includes by the names "art/<file>".
//
//go:embed *.cu art.cuh
var kernelFS embed.FS

// Launch configuration of art.cu: every kernel is one thread per item with
// a grid-stride loop, in blocks of kernelBlock threads, at most maxBlocks
// blocks.
const (
	kernelBlock = 256
	maxBlocks   = 1 << 20
)

// lookupLanes is the lanes per key of ag_get_lanes (Options.LookupLanes).
const lookupLanes = 8

// grid returns the grid of a kernel over n items.
func grid(n int) gpu.Dim3 { return gpu.D1(min(gpu.Grid(n, kernelBlock), maxBlocks)) }

// kernelDefines are the constants of art.cu besides the layout's.
func kernelDefines() []gpu.Define {
	return []gpu.Define{
		gpu.Def("W_META", wMeta), gpu.Def("W_PREFIX", wPrefix), gpu.Def("W_TERM", wTerm), gpu.Def("W_PARENT", wParent),
		gpu.Def("DESC_WORDS", descWords),
		gpu.Def("DST_SHIFT", dstShift), gpu.Def("DST_ROOT", dstRoot), gpu.Def("DST_GROUP", dstGroup), gpu.Def("NO_SEG", noSeg),
		gpu.Def("OP_ADD", opAdd), gpu.Def("OP_SET", opSet), gpu.Def("OP_DEL", opDel), gpu.Def("OP_TRIM", opTrim),
		gpu.Def("OUT_STAY", outStay), gpu.Def("OUT_MOVE", outMove), gpu.Def("OUT_EMPTY", outEmpty), gpu.Def("OUT_COLLAPSE", outCollapse),
		gpu.Def("CLS_UPD", clsUpd), gpu.Def("CLS_ROOT", clsRoot), gpu.Def("CLS_ADD", clsAdd), gpu.Def("CLS_SPLIT", clsSplit),
		gpu.Def("SRC_OLD", srcOld), gpu.Def("SRC_ENTRY", srcEntry), gpu.Def("SRC_MOVED", srcMoved),
		gpu.Def("LANES", lookupLanes),
	}
}

// Programs returns the package's kernel programs (for compile checks): one
// program, art.cu, with every part of the package's kernels as a header.
// Cost: reads the embedded sources.
func Programs() []gpu.Program {
	return []gpu.Program{gpu.NewProgramFS(kernelFS, "art", "art.cu", append(layoutDefines(), kernelDefines()...)...)}
}

// kernelSet holds art.cu's kernels on one device, by name.
type kernelSet struct {
	iota                                                            *gpu.Function
	get, getLanes, updMark, updWrite                                *gpu.Function
	sChunk, sRunkey, sPermute, sScatter, sMarks, sFirst, sNewrun    *gpu.Function
	sLast, sPrefixes, sOffsets                                      *gpu.Function
	bItems, bRootFlags, bRootSegs, bSegInit, bPlan, bPieces, bCount *gpu.Function
	totals, bWrite, bPlace, bClose, bItemseg                        *gpu.Function
	iClassify, iEdgekeys, iGflags, iGroups, iItems, iSegs           *gpu.Function
	iEntries, iRootWrites, iValues                                  *gpu.Function
	nKeys, nGather, nPlan, nFinal, nEmit, nWrite, nMovedInplace     *gpu.Function
	nRootWrites, nPushFrees, nRuns                                  *gpu.Function
	nFreeMarks, nFreeScatter                                        *gpu.Function
	dFind, dMark, dLeafFlags, dDepthkeys, dEntries, qScan           *gpu.Function
	qCollect, qEmit, qOrderKeys, qScanPerm, qCollectPerm            *gpu.Function
	qCands, qTrim, qPairs                                           *gpu.Function
	qWalk8, qWalk16, qWalk32                                        *gpu.Function
	acSizes, acMove                                                 *gpu.Function
}

// kernelNames maps each kernel of art.cu to its field.
func (k *kernelSet) names() map[string]**gpu.Function {
	return map[string]**gpu.Function{
		"a_iota": &k.iota, "ag_get": &k.get, "ag_get_lanes": &k.getLanes, "ag_update_mark": &k.updMark, "ag_update_write": &k.updWrite,
		"as_chunk": &k.sChunk, "as_runkey": &k.sRunkey, "as_permute": &k.sPermute, "as_scatter": &k.sScatter,
		"as_marks": &k.sMarks, "as_first": &k.sFirst, "as_newrun": &k.sNewrun, "as_last": &k.sLast, "as_prefixes": &k.sPrefixes,
		"as_offsets": &k.sOffsets, "ab_batch_items": &k.bItems, "ab_root_flags": &k.bRootFlags, "ab_root_segs": &k.bRootSegs, "ab_seg_init": &k.bSegInit, "ab_plan": &k.bPlan,
		"ab_pieces": &k.bPieces, "ab_count": &k.bCount, "a_totals": &k.totals, "ab_write": &k.bWrite, "ab_place": &k.bPlace,
		"ab_close": &k.bClose, "ab_itemseg": &k.bItemseg,
		"ai_classify": &k.iClassify, "ai_edgekeys": &k.iEdgekeys, "ai_gflags": &k.iGflags, "ai_groups": &k.iGroups,
		"ai_items": &k.iItems, "ai_segs": &k.iSegs, "ai_entries": &k.iEntries, "ai_root_writes": &k.iRootWrites, "ai_values": &k.iValues,
		"an_keys": &k.nKeys, "an_gather": &k.nGather, "an_plan": &k.nPlan, "an_final": &k.nFinal, "an_emit": &k.nEmit,
		"an_write": &k.nWrite, "an_moved_inplace": &k.nMovedInplace, "an_runs": &k.nRuns, "an_root_writes": &k.nRootWrites,
		"an_push_frees": &k.nPushFrees,
		"an_free_marks": &k.nFreeMarks, "an_free_scatter": &k.nFreeScatter,
		"ad_find": &k.dFind, "ad_mark": &k.dMark, "ad_leaf_flags": &k.dLeafFlags, "ad_depthkeys": &k.dDepthkeys, "ad_entries": &k.dEntries,
		"aq_scan": &k.qScan, "aq_collect": &k.qCollect, "aq_emit": &k.qEmit, "aq_order_keys": &k.qOrderKeys, "aq_scan_perm": &k.qScanPerm,
		"aq_collect_perm": &k.qCollectPerm, "aq_cands": &k.qCands, "aq_trim": &k.qTrim, "aq_pairs": &k.qPairs,
		"aq_walk8": &k.qWalk8, "aq_walk16": &k.qWalk16, "aq_walk32": &k.qWalk32, "ac_sizes": &k.acSizes, "ac_move": &k.acMove,
	}
}

// loadKernels compiles art.cu for d (through the cubin cache) and looks up
// every kernel. Cost: one NVRTC compilation on a cache miss.
func loadKernels(d *gpu.Device) (*kernelSet, error) {
	m, err := d.Load(Programs()[0])
	if err != nil {
		return nil, err
	}
	k := &kernelSet{}
	for name, f := range k.names() {
		if *f, err = m.Function(name); err != nil {
			return nil, fmt.Errorf("kernel %s: %w", name, err)
		}
	}
	// Every field is named above.
	v := reflect.ValueOf(k).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			return nil, fmt.Errorf("art: kernel field %s not loaded", v.Type().Field(i).Name)
		}
	}
	return k, nil
}

// treeDesc is art.cu's Tree: the device pointers and counters kernels
// read, written by the host before each step.
type treeDesc struct {
	pool      [numKinds + 1]uint64
	free      [numKinds + 1]uint64
	pend      [numKinds + 1]uint64
	hwm       [numKinds + 1]uint64
	top       [numKinds + 1]uint64
	arena     uint64
	root      uint64
	width     uint64
	tlen      uint64
	bdata     uint64
	boffs     uint64
	bvals     uint64
	arenaBase uint64
}

// descWords is the descriptor's size in words.
const descWords = int(unsafe.Sizeof(treeDesc{}) / 8)

// words returns the descriptor as words.
func (d *treeDesc) words() []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(d)), descWords)
}
