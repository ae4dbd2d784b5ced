package gputest

import (
	"os"
	"sync"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// EnvRequireGPU turns "no GPU" from a skip into a failure when set to 1.
const EnvRequireGPU = "WARPKV_REQUIRE_GPU"

// Required reports whether WARPKV_REQUIRE_GPU=1.
func Required() bool { return os.Getenv(EnvRequireGPU) == "1" }

var (
	once   sync.Once
	shared *gpu.Device
	err    error
)

// Open returns a device shared by the tests of one package, opened once, or
// the reason none is usable. The device is never closed: the process exit
// releases it.
func Open() (*gpu.Device, error) {
	once.Do(func() {
		if ok, why := gpu.Available(); !ok {
			err = &noGPU{why}
			return
		}
		shared, err = gpu.Open(0)
	})
	return shared, err
}

// Device returns the shared device (see Open), or skips the test (fails it
// under WARPKV_REQUIRE_GPU=1) when none is usable.
func Device(tb testing.TB) *gpu.Device {
	tb.Helper()
	d, err := Open()
	if err != nil {
		Unavailable(tb, err.Error())
	}
	return d
}

// Stream returns a new stream on d, closed when the test ends (after its
// deferred calls), or fails the test. Cost: one cuStreamCreate.
func Stream(tb testing.TB, d *gpu.Device) *gpu.Stream {
	tb.Helper()
	s, err := d.NewStream()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Unavailable skips the test, or fails it under WARPKV_REQUIRE_GPU=1.
func Unavailable(tb testing.TB, why string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("GPU required (WARPKV_REQUIRE_GPU=1) but unusable: %s", why)
	}
	tb.Skipf("no usable GPU: %s", why)
}

// NVRTC skips (or fails under WARPKV_REQUIRE_GPU=1) when NVRTC cannot be
// loaded; compile-only tests use it, since they need no GPU.
func NVRTC(tb testing.TB) {
	tb.Helper()
	if _, _, e := gpu.NVRTCVersion(); e != nil {
		Unavailable(tb, e.Error())
	}
}

type noGPU struct{ why string }

func (e *noGPU) Error() string { return e.why }
