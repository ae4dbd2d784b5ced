package hashindex

import (
	"testing"

	"warpkv/gpu"
	"warpkv/internal/gputest"
)

// TestKernelsCompile compiles the package's kernels with NVRTC for Hopper
// (sm_90). It needs NVRTC but no GPU, so CI catches kernel syntax and type
// errors; with a GPU the engine tests cover the rest.
func TestKernelsCompile(t *testing.T) {
	gputest.NVRTC(t)
	for name, src := range KernelSources() {
		t.Run(name, func(t *testing.T) {
			cubin, err := gpu.CompileCUBIN(name, src, "sm_90", kernelOptions(name))
			if err != nil {
				t.Fatal(err)
			}
			if len(cubin) == 0 {
				t.Fatal("empty cubin")
			}
		})
	}
}
