package art

import (
	"fmt"
	"runtime"

	"github.com/warpkv/warpkv/gpu"
)

// Options configure a Tree.
type Options struct {
	// Device selects the engine as engine.Place does: "auto" (a GPU when
	// one is usable, else the CPU), "cpu", "gpu" or "gpu:N"; "" means the
	// value of WARPKV_DEVICE, else auto. Ignored when GPU is set.
	Device string

	// GPU, when set, is an open device to run the GPU engine on; the
	// caller keeps ownership and must close the Tree before the device.
	// The pools of trees rebuilt or closed stay on it as spare memory for
	// the next tree's pools (gpu/spare.go) until it runs short, its
	// ReleaseSpare, or its Close.
	GPU *gpu.Device

	// Workers is the number of goroutines of the CPU engine's batches (0:
	// GOMAXPROCS).
	Workers int

	// LookupLanes is the GPU engine's lanes per key of a lookup: 0 or 1,
	// one thread per key; 8, a group of 8 lanes per key that splits the
	// key and prefix comparisons and the N4/N16 key search (for long
	// keys). The CPU engine ignores it. See Tree.SetLookupLanes.
	LookupLanes int
}

// workers returns the resolved worker count.
func (o Options) workers() (int, error) {
	if o.Workers < 0 {
		return 0, fmt.Errorf("art: negative workers %d", o.Workers)
	}
	if o.Workers == 0 {
		return runtime.GOMAXPROCS(0), nil
	}
	return o.Workers, nil
}
