package engine

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// Placement is where an engine runs: the backend, the device for the GPU
// backend, whether the engine owns (and must close) that device, and a
// sentence saying what was chosen and why.
type Placement struct {
	Backend gpu.Backend
	Device  *gpu.Device // nil on the CPU backend
	Owned   bool        // the engine opened Device and closes it in Close
	Reason  string
}

// Place resolves where an engine named name (used in errors and in the
// reason, e.g. "btree") runs. A non-nil given device wins: the engine runs
// there and the caller keeps ownership. Otherwise option is a device option
// (see the package documentation) resolved by gpu.Choose; a GPU it opens is
// owned by the engine. Cost: O(1) for the CPU; opening the device for a GPU.
func Place(name, option string, given *gpu.Device) (Placement, error) {
	if given != nil {
		return Placement{
			Backend: gpu.BackendGPU, Device: given,
			Reason: fmt.Sprintf("%s: gpu engine on %s: device given by the caller", name, given),
		}, nil
	}
	c, err := gpu.Choose(option)
	if err != nil {
		return Placement{}, fmt.Errorf("%s: %w", name, err)
	}
	return Placement{Backend: c.Backend, Device: c.Device, Owned: c.Device != nil, Reason: name + ": " + c.Reason}, nil
}

// Release closes the device if the placement owns it. Engines call it from
// Close and when opening fails after Place. Cost: the device's teardown.
func (p Placement) Release() error {
	if p.Owned && p.Device != nil {
		return p.Device.Close()
	}
	return nil
}

// Shards is where an engine sharded over GPUs runs: one placement per
// GPU, each owning its device (none on the CPU backend), and a sentence
// saying what was chosen and why.
type Shards struct {
	GPUs   []Placement
	Reason string
}

// PlaceAll resolves a device option for an engine that runs one shard per
// GPU (the server's index): "auto" every usable GPU, else the CPU with the
// reason; "gpu" every usable GPU, or an error naming why there is none;
// "gpu:N" that GPU; "cpu" none. A GPU past the first that fails to open is
// left out. Cost: opening each device.
func PlaceAll(option string) (Shards, error) {
	spec, err := gpu.ParseSpec(option)
	if err != nil {
		return Shards{}, err
	}
	c, err := gpu.Choose(option) // the first usable GPU, or the CPU with the reason
	if err != nil {
		return Shards{}, err
	}
	if c.Device == nil {
		return Shards{Reason: c.Reason}, nil
	}
	s := Shards{GPUs: []Placement{{Backend: gpu.BackendGPU, Device: c.Device, Owned: true, Reason: c.Reason}}}
	if spec.Ordinal >= 0 {
		s.Reason = c.Reason
		return s, nil
	}
	n, _ := gpu.Count() // a count that fails leaves the one GPU already open: one shard
	for i := 1; i < n; i++ {
		d, err := gpu.Open(i)
		if err != nil {
			continue // an unusable GPU is left out of the shards
		}
		s.GPUs = append(s.GPUs, Placement{Backend: gpu.BackendGPU, Device: d, Owned: true,
			Reason: fmt.Sprintf("gpu engine on %s: shard %d of %s", d, i, spec)})
	}
	names := make([]string, len(s.GPUs))
	for i, p := range s.GPUs {
		names[i] = p.Device.String()
	}
	s.Reason = fmt.Sprintf("gpu engine, index sharded over %d GPU(s) %v: %s", len(s.GPUs), names, spec)
	return s, nil
}

// Release closes every device the shards own. Cost: each device's
// teardown.
func (s Shards) Release() error {
	var errs []error
	for _, p := range s.GPUs {
		errs = append(errs, p.Release())
	}
	return errors.Join(errs...)
}
