package hashindex

import (
	_ "embed"

	"github.com/warpkv/warpkv/gpu"
)

// Names of the embedded CUDA C sources, used in diagnostics and the
// compile cache.
const (
	indexFile = "hashindex.cu" // search, insert, delete, a small round's update, count
	groupFile = "group.cu"     // device-side grouping by partition
)

var (
	//go:embed hashindex.cu
	indexSource string
	//go:embed group.cu
	groupSource string
)

// Programs returns the package's kernel programs: hashindex.cu (search,
// insert, delete, a small round's update, count), group.cu (grouping by partition) and persist.cu
// (the resident search kernel of the server), each with
// the shared headers and the constants the Go side owns (launch
// configuration, table layout, result reasons), for Device.Load and the
// compile test of every kernel. Cost: O(1).
func Programs() []gpu.Program {
	return []gpu.Program{
		gpu.NewProgram(indexFile, indexSource, indexDefines()...),
		gpu.NewProgram(groupFile, groupSource,
			gpu.Def("SMALL_GROUP_MAX", smallGroupMax), gpu.Def("SMALL_GROUP_THREADS", smallGroupThreads)),
		persistProgram(),
	}
}

// indexDefines are the constants hashindex.cu takes from Go (persist.cu,
// which includes it, passes them too). Cost: O(1).
func indexDefines() []gpu.Define {
	return []gpu.Define{
		gpu.Def("SEARCH_JOBS", searchJobs), gpu.Def("CELLS", CellsPerBucket), gpu.Def("BUCKET_WORDS", BucketWords),
		gpu.Def("NOT_FOUND", NotFound), gpu.Def("RES_OVERWRITTEN", Overwritten), gpu.Def("RES_DISPLACED", Displaced),
		gpu.Def("SMALL_UPDATE_MAX", smallUpdateCap), gpu.Def("SMALL_UPDATE_THREADS", smallUpdateThreads),
	}
}

// Launch configuration of hashindex.cu and group.cu. The index kernels run
// 8-lane units (CELLS there), in blocks of whole warps so that no unit
// straddles two.
const (
	unitLanes         = CellsPerBucket // CELLS: lanes per processing unit
	searchJobs        = 4              // SEARCH_JOBS: jobs per hix_search unit, 1 to 8
	searchBlock       = 128            // threads per hix_search block: 16 units
	updateBlock       = 128            // threads per hix_insert and hix_delete block: 16 runs
	groupBlock        = 256            // threads per block of the group.cu kernels but hix_group_small: one job or partition each
	smallGroupMax     = 1 << 12        // SMALL_GROUP_MAX: batches up to this size are grouped by hix_group_small (32 KiB of shared memory)
	smallGroupThreads = 1024           // SMALL_GROUP_THREADS: threads of the one hix_group_small block
	countBlock        = 256            // threads per hix_count block
	countMaxBlocks    = 1024           // most hix_count blocks: each thread strides over the rest
)

// countGrid returns the hix_count grid for n values: a thread per value,
// at most countMaxBlocks blocks.
func countGrid(n int) gpu.Dim3 { return gpu.D1(min(gpu.Grid(n, countBlock), countMaxBlocks)) }

// searchGrid returns the hix_search grid for n jobs: one unit per
// searchJobs jobs.
func searchGrid(n int) gpu.Dim3 {
	units := (n + searchJobs - 1) / searchJobs
	return gpu.D1(gpu.Grid(units*unitLanes, searchBlock))
}

// updateGrid returns the hix_insert/hix_delete grid for runs runs of jobs:
// one unit per run.
func updateGrid(runs int) gpu.Dim3 { return gpu.D1(gpu.Grid(runs*unitLanes, updateBlock)) }

// kernelSet holds the package's kernels on one device.
type kernelSet struct {
	search, insert, remove, count, updateSmall      *gpu.Function
	groupKeys, groupGather, groupStarts, groupSmall *gpu.Function
}

// loadKernels loads the package's programs on d (compiling through the
// on-disk cubin cache; the gpu package loads a module once per device) and
// looks up their kernels. Cost: NVRTC compilations (hundreds of
// milliseconds each) on a cache miss.
func loadKernels(d *gpu.Device) (*kernelSet, error) {
	ps := Programs()
	m, err := d.Load(ps[0])
	if err != nil {
		return nil, err
	}
	fs, err := m.Functions("hix_search", "hix_insert", "hix_delete", "hix_count", "hix_update_small")
	if err != nil {
		return nil, err
	}
	g, err := d.Load(ps[1])
	if err != nil {
		return nil, err
	}
	gs, err := g.Functions("hix_group_keys", "hix_group_gather", "hix_group_starts", "hix_group_small")
	if err != nil {
		return nil, err
	}
	return &kernelSet{
		search: fs[0], insert: fs[1], remove: fs[2], count: fs[3], updateSmall: fs[4],
		groupKeys: gs[0], groupGather: gs[1], groupStarts: gs[2], groupSmall: gs[3],
	}, nil
}
