package prim

import (
	"testing"

	"warpkv/gpu"
	"warpkv/internal/gputest"
)

// TestKernelsCompile compiles every kernel file of the package with NVRTC
// for Hopper (sm_90). It needs NVRTC but no GPU, so CI catches kernel syntax
// and type errors; with a GPU the tests that run the kernels cover the rest.
func TestKernelsCompile(t *testing.T) {
	gputest.NVRTC(t)
	srcs, err := KernelSources()
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) == 0 {
		t.Fatal("no kernel sources embedded")
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			cubin, err := gpu.CompileCUBIN(name, src, "sm_90", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(cubin) == 0 {
				t.Fatal("empty cubin")
			}
		})
	}
}
