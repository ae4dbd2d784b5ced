package kernels

import (
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestEveryKernelCompiles compiles every program of every package with
// NVRTC for each architecture in Archs (it needs NVRTC but no GPU), so CI
// catches kernel syntax and type errors, missing headers and constants not
// passed from Go; the GPU tests of each package run the kernels.
func TestEveryKernelCompiles(t *testing.T) {
	gputest.NVRTC(t)
	for _, pkg := range All() {
		if len(pkg.Programs) == 0 {
			t.Errorf("%s lists no kernel programs", pkg.Name)
		}
		for _, p := range pkg.Programs {
			for _, arch := range Archs {
				t.Run(pkg.Name+"/"+p.Name+"/"+arch, func(t *testing.T) {
					t.Parallel()
					cubin, err := p.CompileCUBIN(arch)
					if err != nil {
						t.Fatal(err)
					}
					if len(cubin) == 0 {
						t.Fatal("empty cubin")
					}
				})
			}
		}
	}
}
