package hashindex

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of hix_update_small (hashindex.cu): the most jobs
// of a round it applies (its blocks' shared memory: 14 bytes a job), its
// block, and how its grid grows with the round. A unit applies its jobs
// one after another, each a dependent read of the table (about a
// microsecond), and the units of a warp that have jobs take turns, so the
// grid gives a round about 8 units a job: with 128 units a block
// (2026-11-28, H200) a round of 256 jobs took 30 µs and one of 2048
// 111 µs, while one of 8 took 14 µs. Every block reads the whole round
// from host memory (12 bytes a job), which bounds the grid.
const (
	smallUpdateMax       = 1 << 11 // SMALL_UPDATE_MAX: 28 KiB of shared memory a block
	smallUpdateThreads   = 1024    // SMALL_UPDATE_THREADS: 128 units a block
	smallUpdatePerBlock  = 16      // jobs of a round per block of the grid
	smallUpdateMaxBlocks = 16      // most blocks: 16 reads of a round of 2048 jobs are 384 KiB over the bus
)

// smallUpdateGrid returns hix_update_small's blocks for a round of n jobs
// on parts partitions: a block per smallUpdatePerBlock jobs, at most
// smallUpdateMaxBlocks, and no more than give every partition its own
// unit.
func smallUpdateGrid(n, parts int) int {
	units := smallUpdateThreads / unitLanes
	return max(1, min((n+smallUpdatePerBlock-1)/smallUpdatePerBlock, (parts+units-1)/units, smallUpdateMaxBlocks))
}

// updateStaged applies a round of up to smallUpdateMax jobs with
// hix_update_small (one launch, one synchronization: the jobs and results
// stay in st's mapped memory, the counts come back through the engine's
// mapped counters), a larger one as a staged delete and a staged insert.
func (e *gpuEngine) updateStaged(st *Staging, dels, ins int, done func(first int, results []uint64)) (int, error) {
	n := dels + ins
	if n > smallUpdateMax {
		hits := 0
		if dels > 0 {
			h, err := e.removeStagedAt(st, 0, dels, nil)
			if err != nil {
				return 0, err
			}
			hits = h
		}
		if ins > 0 {
			if err := e.insertStagedAt(st, dels, ins, nil, done); err != nil {
				return hits, err
			}
		}
		return hits, nil
	}
	k, err := e.kernels()
	if err != nil {
		return 0, err
	}
	if e.updCounts == nil {
		if e.updCounts, err = gpu.AllocMapped[uint32](e.dev, 2*smallUpdateMaxBlocks); err != nil {
			return 0, fmt.Errorf("update counters: %w", err)
		}
	}
	blocks := smallUpdateGrid(n, e.geo.parts)
	h, l := st.host, st.l
	if err := k.updateSmall.Launch(e.stream, gpu.D1(blocks), gpu.D1(smallUpdateThreads), 0,
		e.table, e.geo.mask, e.geo.pmask, uint32(e.geo.pbits), e.maxDisp, h.PtrAt(l.hashes), h.PtrAt(l.locs),
		uint32(dels), uint32(n), h.PtrAt(l.out), e.updCounts.Ptr()); err != nil {
		return 0, err
	}
	if err := e.stream.Synchronize(); err != nil {
		return 0, err
	}
	hits, drops := 0, 0
	c := e.updCounts.Slice()
	for b := range blocks {
		hits += int(c[2*b])
		drops += int(c[2*b+1])
	}
	if drops > 0 {
		done(0, st.results[dels:n])
	}
	return hits, nil
}
