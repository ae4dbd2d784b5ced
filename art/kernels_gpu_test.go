package art

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUKernelsFit loads art.cu's kernels and requires each to run
// blocks of kernelBlock threads (at least one resident a multiprocessor)
// and an_write four (its __launch_bounds__ promise, which its shared
// stage of STAGE_MAX x STAGE_BLOCK links assumes). It logs every
// kernel's registers a thread and resident blocks a multiprocessor, so
// that a change to the kernels can be compared with the one before it.
func TestGPUKernelsFit(t *testing.T) {
	dev := gputest.Device(t)
	k, err := loadKernels(dev)
	if err != nil {
		t.Fatal(err)
	}
	names := k.names()
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	var sb strings.Builder
	for _, n := range sorted {
		f := *names[n]
		regs, err := f.Registers()
		if err != nil {
			t.Fatalf("%s: registers: %v", n, err)
		}
		perSM, err := f.BlocksPerSM(kernelBlock, 0)
		if err != nil {
			t.Fatalf("%s: blocks a multiprocessor: %v", n, err)
		}
		fmt.Fprintf(&sb, "%-20s regs %3d  blocks/SM %2d\n", n, regs, perSM)
		want := 1
		if n == "an_write" {
			want = 4
		}
		if perSM < want {
			t.Errorf("%s: %d resident blocks of %d threads a multiprocessor, want at least %d", n, perSM, kernelBlock, want)
		}
	}
	t.Logf("kernels (registers a thread, resident blocks of %d threads a multiprocessor):\n%s", kernelBlock, sb.String())
}
