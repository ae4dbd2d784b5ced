package btree

import (
	"fmt"
	"runtime"

	"github.com/warpkv/warpkv/gpu"
)

// Order bounds and default.
const (
	// DefaultOrder is the node order of the CPU engine when Options.Order is 0.
	DefaultOrder = 64
	// MinOrder is the smallest node order.
	MinOrder = 4
	// MaxOrder is the largest node order.
	MaxOrder = 1 << 16
)

// Options configure a Tree.
type Options struct {
	// Order is the number of key slots of a node (0: DefaultOrder); it must
	// be between MinOrder and MaxOrder.
	Order int

	// Workers is the number of goroutines of a batch (0: GOMAXPROCS).
	Workers int

	// Device selects the engine as engine.Place does: "auto" (a GPU when
	// one is usable, else the CPU), "cpu", "gpu" or "gpu:N"; "" means the
	// value of WARPKV_DEVICE, else auto. Ignored when GPU is set.
	Device string

	// GPU, when set, is an open device to run the GPU engine on; the caller
	// keeps ownership and must close the Tree before the device.
	GPU *gpu.Device
}

// resolved is Options after defaults and validation.
type resolved struct {
	order   int // key slots per node
	fill    int // entries per node written by Build and splits
	workers int
}

// resolve applies the defaults to o and checks it. Cost: O(1).
func (o Options) resolve() (resolved, error) {
	order := o.Order
	if order == 0 {
		order = DefaultOrder
	}
	if order < MinOrder || order > MaxOrder {
		return resolved{}, fmt.Errorf("btree: order %d: want %d to %d", o.Order, MinOrder, MaxOrder)
	}
	if o.Workers < 0 {
		return resolved{}, fmt.Errorf("btree: negative workers %d", o.Workers)
	}
	w := o.Workers
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return resolved{order: order, fill: order - order/8, workers: w}, nil
}
