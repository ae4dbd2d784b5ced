package art

import "fmt"

// step marks the end of step name of the batch in progress when the
// engine is traced (g.trace, an engine.StepTrace: benchmarks and tests);
// nothing otherwise. Cost: one cuEventRecord when traced.
func (g *gpuEngine) step(name string) { g.trace.Mark(g.dev, g.s, name) }

// stepN is step with the name format(i), formatted only when traced.
func (g *gpuEngine) stepN(format string, i int) {
	if g.trace != nil {
		g.step(fmt.Sprintf(format, i))
	}
}
