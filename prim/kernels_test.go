package prim

import (
	"slices"
	"testing"
)

// TestEveryKernelFileIsAProgram checks that every embedded .cu file is one
// of Programs, so that the compile test of every kernel (internal/kernels)
// sees it, and that each program carries its launch constants.
func TestEveryKernelFileIsAProgram(t *testing.T) {
	ents, err := kernelFS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range Programs() {
		names = append(names, p.Name)
	}
	for _, e := range ents {
		if !slices.Contains(names, e.Name()) {
			t.Errorf("%s is embedded but not among Programs %v", e.Name(), names)
		}
	}
	for _, p := range Programs() {
		// fill.cu and limits.cu take their block size as a launch argument.
		if p.Name != "fill.cu" && p.Name != "limits.cu" && len(p.Defines) == 0 {
			t.Errorf("%s has no launch constants", p.Name)
		}
		if _, ok := p.Headers["warpkv/types.cuh"]; !ok {
			t.Errorf("%s lacks the shared headers", p.Name)
		}
	}
}
