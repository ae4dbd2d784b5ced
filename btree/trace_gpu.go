package btree

import (
	"errors"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// ms is d in milliseconds.
func ms[D ~int64](d D) float64 { return float64(d) / 1e6 }

// start begins a timed batch: the clock's start mark on the tree's stream
// and, when the tree is traced, the trace's first step.
func (g *gpuTree) start() {
	g.clock.Start()
	g.trace.Start()
	g.clock.Mark(g.s, engine.MarkStart)
	g.step("start")
}

// step marks the end of step name of the batch in progress when the tree
// is traced (tests and benchmarks: an engine.StepTrace); nothing otherwise.
func (g *gpuTree) step(name string) { g.trace.Mark(g.dev, g.s, name) }

// setStageWorkers replaces the pinned staging rings by rings whose chunks
// are copied on w goroutines (benchmarks compare stageWorkers with
// others). Cost: closing the old rings (freeing their pinned memory).
func (g *gpuTree) setStageWorkers(w int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := errors.Join(g.s.Synchronize(), g.up.Close(), g.down.Close()); err != nil {
		return err
	}
	c := stageConfig
	c.Workers = w
	g.up, g.down = gpu.NewPipeline(g.dev, c), gpu.NewPipeline(g.dev, c)
	return nil
}
