package art

import "github.com/warpkv/warpkv/internal/par"

// pointTuning tunes the host side of the GPU engine's point calls; the
// zero value is the default. Benchmarks (BenchmarkGPUPointSteps) compare
// the settings.
type pointTuning struct {
	// packSplit is the parts per worker of the fan-outs that size, pack
	// and unpack a call's chunks (0: pointPackSplit). With more parts a
	// worker that is held up (its P taken by the goroutine queueing the
	// chunks, by the runtime, or its thread by the OS) delays the fan-out
	// by a smaller part.
	packSplit int
	// touchAnswers makes Get and Update take the page faults of the
	// answers they allocate on the allocating goroutine, beside the
	// call's sizing and packing (allocAnswers), not in the copies out.
	touchAnswers bool
	// hugeAnswers makes Get and Update advise huge pages for the answers
	// they allocate (adviseHuge): fewer page faults where the memory is
	// fresh from the OS.
	hugeAnswers bool
	// coldCheck leaves the host's workers as they are before a staged
	// call's check (no wakeHost).
	coldCheck bool
}

// pointPackSplit is the default parts per worker of a point call's host
// fan-outs: 1. With 2 (BenchmarkGPUPointSteps at 100M keys, two H200
// machines, 2026-11-29) updates from Go memory were 4-8% faster and
// lookups unchanged on one machine, lookups 3-10% slower on the other.
const pointPackSplit = 1

// hostParts is the number of parts the fan-outs of a point call's host
// copies split into: g.workers times packSplit.
func (g *gpuEngine) hostParts() int {
	split := g.pointTune.packSplit
	if split <= 0 {
		split = pointPackSplit
	}
	return par.Workers(g.workers) * split
}

// wakeHost starts waking the workers of par.Shared (an empty fan-out) so
// that a fan-out shortly after finds them spinning: a staged call's check
// (one fan-out over the offsets) comes after its transfers in are queued,
// tens of microseconds later, and with the workers parked (a staged call
// makes no other fan-out, so between calls they park) the caller ran
// nearly all of it alone, 0.31 ms for 1Mi keys on an H200 host, before
// the first kernel could start. Cost: a broadcast to the parked workers
// (microseconds on the caller).
func (g *gpuEngine) wakeHost() {
	if g.pointTune.coldCheck {
		return
	}
	p := par.Shared()
	p.Do(p.Workers(), func(int) {})
}
