package engine

import (
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
