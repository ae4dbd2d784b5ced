package hashindex

import (
	_ "embed"

	"warpkv/gpu"
)

// kernelFile is the name of the embedded CUDA C source, used in
// diagnostics and the compile cache.
const kernelFile = "hashindex.cu"

//go:embed hashindex.cu
var kernelSource string

// KernelSources returns the names and CUDA C sources of the package's
// kernel files, for compile checks.
func KernelSources() map[string]string { return map[string]string{kernelFile: kernelSource} }

// Launch configuration of hashindex.cu: every kernel runs 8-lane units
// (CELLS there), in blocks of whole warps so that no unit straddles two.
const (
	unitLanes   = CellsPerBucket // CELLS: lanes per processing unit
	searchBlock = 256            // threads per hix_search block: 32 jobs
	updateBlock = 128            // threads per hix_insert and hix_delete block: 16 runs
)

// searchGrid returns the hix_search grid for n jobs: one unit per job.
func searchGrid(n int) gpu.Dim3 { return gpu.D1(gpu.Grid(n*unitLanes, searchBlock)) }

// updateGrid returns the hix_insert/hix_delete grid for runs runs of jobs
// (the partitions that have jobs): one unit per run.
func updateGrid(runs int) gpu.Dim3 { return gpu.D1(gpu.Grid(runs*unitLanes, updateBlock)) }

// kernelSet holds the package's kernels on one device.
type kernelSet struct {
	search, insert, remove *gpu.Function
}

// loadKernels compiles hashindex.cu for d (through the on-disk cubin cache;
// the gpu package loads a module once per device) and looks up its kernels.
// Cost: an NVRTC compilation (hundreds of milliseconds) on a cache miss.
func loadKernels(d *gpu.Device) (*kernelSet, error) {
	m, err := d.Compile(kernelFile, kernelSource)
	if err != nil {
		return nil, err
	}
	fs, err := m.Functions("hix_search", "hix_insert", "hix_delete")
	if err != nil {
		return nil, err
	}
	return &kernelSet{search: fs[0], insert: fs[1], remove: fs[2]}, nil
}
