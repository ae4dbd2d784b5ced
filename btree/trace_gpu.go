package btree

import "github.com/warpkv/warpkv/engine"

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
