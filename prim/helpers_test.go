package prim

import (
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// testEngines returns the engines every primitive test runs against: the CPU
// engine always, and the GPU engine when one is usable (otherwise the GPU
// case skips, or fails under WARPKV_REQUIRE_GPU=1).
func testEngines(t *testing.T) []*Engine {
	t.Helper()
	out := []*Engine{NewCPU(0)}
	if e := testGPUEngine(t); e != nil {
		out = append(out, e)
	}
	return out
}

var gpuEngine *Engine

// testGPUEngine returns a GPU engine shared by the package's tests, or nil
// (after logging why) when no GPU is usable and none is required.
func testGPUEngine(t *testing.T) *Engine {
	t.Helper()
	if gpuEngine != nil {
		return gpuEngine
	}
	d, err := gputest.Open()
	if err != nil {
		if gputest.Required() {
			t.Fatalf("GPU required (WARPKV_REQUIRE_GPU=1) but unusable: %v", err)
		}
		t.Logf("gpu engine not tested: %v", err)
		return nil
	}
	e, err := NewGPU(d)
	if err != nil {
		t.Fatalf("gpu engine: %v", err)
	}
	gpuEngine = e
	return e
}

// testSizes are the input sizes every primitive is checked at: the edges
// around a warp, a non-power-of-two just past 2^20, and one large size
// (larger on the GPU, smaller under -short).
func testSizes(e *Engine) []int {
	large := 1<<22 + 5
	if e.Name() == "gpu" {
		large = 1<<25 + 3
	}
	if testing.Short() {
		large = 1<<18 + 1
	}
	return []int{0, 1, 31, 32, 33, 1000, 1<<20 + 7, large}
}

// newRand returns a generator with a fresh seed, logged so a failure can be
// replayed.
func newRand(t *testing.T) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %#x", seed)
	return rand.New(rand.NewPCG(seed, seed^0x5DEECE66D))
}

// randomWords returns n random values of T; with bits < width, only the low
// bits vary (many duplicates).
func randomWords[T Word](r *rand.Rand, n int, bits uint) []T {
	out := make([]T, n)
	for i := range out {
		v := r.Uint64()
		if bits < 64 {
			v &= (1 << bits) - 1
		}
		out[i] = T(v)
	}
	return out
}

// poison fills s with a value that no correct primitive writes by accident.
func poison[T Word](s []T) {
	var v uint64 = 0xDEADBEEFDEADBEEF
	for i := range s {
		s[i] = T(v)
	}
}
