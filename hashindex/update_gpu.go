package hashindex

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of hix_update_small (hashindex.cu) and the rounds
// it takes. Measured on an H200 (2026-11-28, BenchmarkUpdateRound, a
// round's p50 with the resident search running): with a block per 512
// jobs, rounds of 1, 8, 64, 256, 1024 and 2048 jobs took 13.0, 13.9, 17.8,
// 30.4, 67.7 and 111 µs, against 37-99 µs as a delete and an insert call
// (72-80 µs from 8 to 256 jobs, 92 at 1024, 99 at 2048); a block per 16
// jobs (up to 16 blocks, every block reading the whole round from host
// memory) was slower at every size (48.7 µs at 256 jobs, 151 at 2048). So
// rounds up to 1024 jobs take the kernel and larger ones the two calls;
// the kernel's blocks hold up to 2048 jobs, the size tested on the device.
const (
	smallUpdateCap       = 1 << 11 // SMALL_UPDATE_MAX: jobs a block holds, 28 KiB of shared memory
	smallUpdateMax       = 1 << 10 // the largest round UpdateStaged gives the kernel
	smallUpdateThreads   = 1024    // SMALL_UPDATE_THREADS: 128 units a block
	smallUpdatePerBlock  = 512     // jobs of a round per block of the grid
	smallUpdateMaxBlocks = smallUpdateCap / smallUpdatePerBlock
)

// smallUpdateGrid returns hix_update_small's blocks for a round of n jobs
// on parts partitions: a block per smallUpdatePerBlock jobs (each block
// reads the whole round from host memory), no more than give every
// partition its own unit.
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
