package art

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// pointTraceStart starts the trace of a point call when the engine is
// traced (g.trace: benchmarks and tests), with the mark "start" on the
// engine's stream; nothing otherwise.
func (g *gpuEngine) pointTraceStart() {
	if g.trace != nil {
		g.trace.Start()
		g.step("start")
	}
}

// pointMark marks step name of a traced point call on stream s: of chunk
// c as "c<c> <name>", or of the whole call when c < 0. Its host time is
// when the host got there; its device time when s got there, which for
// the marks queued right after a transfer or a kernel is when that ended.
// Nothing when the engine is not traced. Cost: one cuEventRecord when
// traced.
func (g *gpuEngine) pointMark(s *gpu.Stream, name string, c int) {
	if g.trace == nil {
		return
	}
	if c >= 0 {
		name = fmt.Sprintf("c%d %s", c, name)
	}
	g.trace.Mark(g.dev, s, name)
}
