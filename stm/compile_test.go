package stm

import (
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// testBodies are the CUDA bodies the GPU tests run, compile-checked here.
var testBodies = []string{
	twoCounters,
	`__device__ void stm_body(stm_tx* tx) { stm_begin(tx, true); for (;;) { stm_read(tx, 0); if (stm_failed(tx)) return; } }`,
}

// TestCUDABodiesCompile compiles the GPU tests' own bodies and the Bank
// body (with its Zipf law), so that a GPU run does not meet a compile
// error first.
func TestCUDABodiesCompile(t *testing.T) {
	gputest.NVRTC(t)
	var specs []*workloadSpec
	for _, body := range testBodies {
		sp, err := CUDA{Body: body, Size: 2, MaxReads: 2, MaxWrites: 2, MaxReadOnlyReads: 2}.spec()
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp)
	}
	sp, err := Bank{Accounts: 1000, Initial: 1, ReadSize: 10, Rounds: 2, Zipf: 0.99}.spec()
	if err != nil {
		t.Fatal(err)
	}
	specs = append(specs, sp)
	for _, sp := range specs {
		p := gpuShape(sp, Config{Servers: 2}.withDefaults(), Options{}, 2).program(sp)
		if _, err := p.CompileCUBIN("sm_90"); err != nil {
			t.Fatal(err)
		}
	}
}
