package art

import (
	"testing"

	"warpkv/internal/gputest"
)

// TestKernelsCompile compiles every program of the package with NVRTC for
// Hopper (sm_90). It needs NVRTC but no GPU.
func TestKernelsCompile(t *testing.T) {
	gputest.NVRTC(t)
	for _, p := range Programs() {
		cubin, err := p.CompileCUBIN("sm_90")
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if len(cubin) == 0 {
			t.Fatalf("%s: empty cubin", p.Name)
		}
	}
}
