package stm

import (
	"testing"

	"warpkv/internal/gputest"
)

// TestKernelsCompile compiles every program of the package for sm_90 with
// NVRTC (no GPU needed).
func TestKernelsCompile(t *testing.T) {
	gputest.NVRTC(t)
	for _, p := range Programs() {
		if _, err := p.CompileCUBIN("sm_90"); err != nil {
			t.Fatalf("%s with %s: %v", p.Name, p.Headers["stm/workload.cuh"][:40], err)
		}
	}
}
