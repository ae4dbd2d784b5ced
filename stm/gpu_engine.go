package stm

import (
	"errors"

	"warpkv/engine"
	"warpkv/gpu"
)

type gpuEngine struct{}

func newGPUEngine(d *gpu.Device, o Options) (*gpuEngine, error) {
	return nil, errors.New("stm: the GPU engine is being built")
}

func (g *gpuEngine) close() error { return nil }

func (g *gpuEngine) run(w Workload, sp *workloadSpec, ro RunOptions) (*Result, engine.Timings, error) {
	return nil, engine.Timings{}, errors.New("stm: the GPU engine is being built")
}
