package mpt

import (
	"testing"

	"warpkv/gpu"
	"warpkv/internal/gputest"
)

// TestKernelsCompile compiles mpt.cu with NVRTC for Hopper (sm_90). It
// needs NVRTC but no GPU.
func TestKernelsCompile(t *testing.T) {
	gputest.NVRTC(t)
	for name, src := range KernelSources() {
		cubin, err := gpu.CompileCUBIN(name, src, "sm_90", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(cubin) == 0 {
			t.Fatalf("%s: empty cubin", name)
		}
	}
}
