package gpu

import (
	"fmt"
	"testing"
)

// TestCopyParGrain checks the ring's parallel copies without a GPU, in
// (non-temporal stores) and out: for the pipeline's own grain and grains
// that do and do not divide the copy, every element lands where it
// belongs and nothing past the end changes.
func TestCopyParGrain(t *testing.T) {
	p := NewPipeline(nil, PipelineConfig{Workers: 4, Grain: 1000})
	for _, n := range []int{0, 1, 999, 1000, 1001, 70_000} {
		for _, grain := range []int{0, 1, 7, 1000, 16 << 10} {
			for _, in := range []bool{true, false} {
				name := fmt.Sprintf("n=%d grain=%d in=%v", n, grain, in)
				src, dst := make([]uint64, n), make([]uint64, n+1)
				for i := range src {
					src[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
				}
				dst[n] = 42
				if in {
					copyIn(p, dst[:n], src, grain)
				} else {
					copyPar(p, dst[:n], src, grain, builtinCopy[uint64])
				}
				for i, x := range src {
					if dst[i] != x {
						t.Fatalf("%s: element %d is %#x, want %#x", name, i, dst[i], x)
					}
				}
				if dst[n] != 42 {
					t.Fatalf("%s: the element past the end changed", name)
				}
			}
		}
	}
}
