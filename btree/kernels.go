package btree

import (
	_ "embed"

	"warpkv/gpu"
)

// kernelFile names the embedded CUDA C source in diagnostics and the
// compile cache.
const kernelFile = "btree.cu"

//go:embed btree.cu
var kernelSource string

// KernelSources returns the names and CUDA C sources of the package's
// kernel files, for compile checks (no NVRTC options are needed).
func KernelSources() map[string]string { return map[string]string{kernelFile: kernelSource} }

// Launch configuration of btree.cu: every kernel is one thread per item
// (key, child, query) with a grid-stride loop, in blocks of kernelBlock
// threads, at most maxBlocks blocks.
const (
	kernelBlock = 256
	maxBlocks   = 1 << 20
)

// grid returns the grid of a kernel over n items.
func grid(n int) gpu.Dim3 { return gpu.D1(min(gpu.Grid(n, kernelBlock), maxBlocks)) }

// kernelSet holds the package's kernels on one device.
type kernelSet struct {
	lastFlags, leaves, level, get, rng *gpu.Function
}

// loadKernels compiles btree.cu for d (through the gpu package's cubin
// cache) and looks up its kernels. Cost: one NVRTC compilation on a cache
// miss.
func loadKernels(d *gpu.Device) (*kernelSet, error) {
	m, err := d.Compile(kernelFile, kernelSource)
	if err != nil {
		return nil, err
	}
	fs, err := m.Functions("bt_last_flags", "bt_leaves", "bt_level", "bt_get", "bt_range")
	if err != nil {
		return nil, err
	}
	return &kernelSet{lastFlags: fs[0], leaves: fs[1], level: fs[2], get: fs[3], rng: fs[4]}, nil
}
