package art

import "github.com/warpkv/warpkv/internal/par"

// pointTuning tunes the host side of the GPU engine's point calls from
// Go memory; the zero value is the default. Benchmarks
// (BenchmarkGPUPointSteps) compare the settings.
type pointTuning struct {
	// packSplit is the parts per worker of the fan-outs that size, pack
	// and unpack a call's chunks (0 or 1: one part per worker). With more
	// parts a worker that is held up (a P taken by the goroutine queueing
	// the chunks, or by the runtime) delays the fan-out by a smaller part.
	packSplit int
	// touchAnswers makes Get and Update take the page faults of the
	// answers they allocate on the allocating goroutine, beside the
	// call's sizing and packing (allocAnswers), not in the copies out.
	touchAnswers bool
}

// hostParts is the number of parts the fan-outs of a point call's host
// copies split into (g.workers, times packSplit).
func (g *gpuEngine) hostParts() int { return par.Workers(g.workers) * max(1, g.pointTune.packSplit) }
