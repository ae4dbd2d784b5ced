package prim

import (
	"embed"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

//go:embed *.cu
var kernelFS embed.FS

// kernelFiles are the package's kernel sources, one program each.
var kernelFiles = []string{"fill.cu", "handoff.cu", "keccak.cu", "limits.cu", "merge.cu", "sort.cu", "scan.cu", "segmax.cu", "select.cu"}

// kernelDefines returns the constants a kernel file is compiled with: its
// launch configuration, owned by the Go launcher beside it.
func kernelDefines(file string) []gpu.Define {
	switch file {
	case "handoff.cu":
		return []gpu.Define{gpu.Def("HANDOFF_WORDS", HandoffWords), gpu.Def("HANDOFF_POLL", handoffPoll)}
	case "keccak.cu":
		return []gpu.Define{gpu.Def("KECCAK_RATE", keccakRate), gpu.Def("KECCAK_THREAD_BLOCK", keccakThreadBlock),
			gpu.Def("KECCAK_WARP_BLOCK", keccakWarpBlock), gpu.Def("WARP_SIZE", keccakWarpSize)}
	case "limits.cu":
		return []gpu.Define{gpu.Def("LIMITS_BLOCK", limitsBlock)}
	case "merge.cu":
		return []gpu.Define{gpu.Def("MERGE_BLOCK", mergeBlock), gpu.Def("MERGE_ITEMS", mergeItems),
			gpu.Def("MERGE_PARTITION_BLOCK", mergePartitionBlock)}
	case "sort.cu":
		return []gpu.Define{gpu.Def("RADIX_BITS", radixBits), gpu.Def("RADIX_DIGITS", radixDigits),
			gpu.Def("BLOCK_THREADS", radixBlockThreads), gpu.Def("ITEMS_PER_THREAD", radixItemsPerThread),
			gpu.Def("SCAN_THREADS", radixScanThreads), gpu.Def("MAX_PASSES", radixMaxPasses),
			gpu.Def("PLAN_WORDS", radixPlanWords)}
	case "scan.cu":
		return []gpu.Define{gpu.Def("SCAN_BLOCK", scanBlock), gpu.Def("SCAN_ROUNDS", scanRounds),
			gpu.Def("SCAN_VEC_BYTES", scanVecBytes)}
	case "segmax.cu":
		return []gpu.Define{gpu.Def("SEGMAX_WARP", segmaxWarp), gpu.Def("SEGMAX_BLOCK", segmaxBlock),
			gpu.Def("SEGMAX_ITEMS", segmaxItems), gpu.Def("SEGMAX_PARTITION_BLOCK", segmaxPartitionBlock)}
	case "select.cu":
		return []gpu.Define{gpu.Def("SELECT_BLOCK", selectBlock), gpu.Def("SELECT_ROUNDS", selectRounds),
			gpu.Def("SELECT_VEC_BYTES", selectVecBytes)}
	}
	return nil
}

// program returns the program of the named kernel file.
func program(file string) (gpu.Program, error) {
	src, err := kernelFS.ReadFile(file)
	if err != nil {
		return gpu.Program{}, fmt.Errorf("prim: kernel source %s: %w", file, err)
	}
	return gpu.NewProgram(file, string(src), kernelDefines(file)...), nil
}

// Programs returns the package's kernel programs (sort, scan, select and
// reduce-by-key, merge, segmented max, Keccak-256, fills, the limits
// suite's copy and gather and its hot-word handoffs), each with the
// shared headers and the launch constants of its Go launcher, for
// Device.Load and the compile test of every kernel. Cost: reads the
// embedded sources.
func Programs() []gpu.Program {
	out := make([]gpu.Program, len(kernelFiles))
	for i, f := range kernelFiles {
		p, err := program(f)
		if err != nil {
			panic(err) // the files are embedded: a missing one is a build error
		}
		out[i] = p
	}
	return out
}
