package art

import (
	"errors"

	"warpkv/gpu"
)

func newGPUEngine(d *gpu.Device, workers int) (backend, error) {
	return nil, errors.New("gpu engine: not built yet")
}
