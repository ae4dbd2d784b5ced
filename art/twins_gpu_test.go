package art

import (
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// openTwins opens an empty GPU tree on dev and an empty CPU tree, the
// engine the GPU tests compare it with; both close when the test ends.
func openTwins(t *testing.T, dev *gpu.Device) (gt, ct *Tree) {
	t.Helper()
	gt, err := Open(Options{GPU: dev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gt.Close() })
	ct, err = Open(Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ct.Close() })
	return gt, ct
}
