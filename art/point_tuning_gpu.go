package art

import "github.com/warpkv/warpkv/internal/par"

// pointTuning tunes the host side of the GPU engine's point calls; the
// zero value is the default (main's way). Benchmarks
// (BenchmarkGPUPointSteps) compare the settings; at 100M keys on H200
// machines (2026-11-29) none was faster on every machine measured.
type pointTuning struct {
	// packSplit is the parts per worker of the fan-outs that size, pack
	// and unpack a call's chunks (0: pointPackSplit). With more parts a
	// worker that is held up (its P taken by the goroutine queueing the
	// chunks, by the runtime, or its thread by the OS) delays the fan-out
	// by a smaller part.
	packSplit int
	// touchAnswers makes the goroutine that allocates the answers of Get
	// and Update write to each of their pages beside the call's sizing
	// and packing (allocAnswers), so that the page faults of fresh memory
	// are taken there, not by the copies out. Not the default: Get from
	// [][]byte was 3-10% faster on two machines, but 3.4x slower on a
	// third, where one goroutine's faults took 6.5 ms for 9.4 MB.
	touchAnswers bool
	// hugeAnswers makes Get and Update advise huge pages for the answers
	// they allocate (adviseHuge): fewer page faults where the memory is
	// fresh from the OS. Not the default: each call's advice splits the
	// heap's mapping at the answers' ends.
	hugeAnswers bool
	// wakeForCheck makes a staged lookup wake the host's workers as it
	// starts (wakeHost) for its check. Not the default: its check took
	// 0.16 ms instead of 0.27 in a traced call, but the median call was
	// 7% slower.
	wakeForCheck bool
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

// wakeHost starts waking the workers of par.Shared (an empty fan-out)
// when the engine is so tuned (wakeForCheck), so that a fan-out shortly
// after finds them spinning: a staged call's check (one fan-out over the
// offsets) comes after its transfers in are queued, and with the workers
// parked (a staged call makes no other fan-out, so between calls they
// park) the caller runs most of it alone: 0.27-0.31 ms for 1Mi keys on an
// H200 host, before the first kernel can start. Cost: a broadcast to the
// parked workers on the caller.
func (g *gpuEngine) wakeHost() {
	if !g.pointTune.wakeForCheck {
		return
	}
	p := par.Shared()
	p.Do(p.Workers(), func(int) {})
}
