package gpu

import (
	"os"
	"testing"
)

// openForTest opens device 0, skipping without a usable GPU unless
// WARPKV_REQUIRE_GPU is 1 (internal/gputest cannot be imported here).
func openForTest(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		if os.Getenv("WARPKV_REQUIRE_GPU") == "1" {
			t.Fatalf("WARPKV_REQUIRE_GPU=1 but no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return d
}

// TestSignalHandlersStayOnTheSignalStack opens a device (the CUDA driver
// installs signal handlers of its own) and checks that every installed
// handler runs on the signal stack (SA_ONSTACK), as the Go runtime needs.
func TestSignalHandlersStayOnTheSignalStack(t *testing.T) {
	d := openForTest(t)
	defer d.Close()
	if off := signalsOffStack(); len(off) > 0 {
		t.Fatalf("signals %v have handlers without SA_ONSTACK after Open", off)
	}
}
