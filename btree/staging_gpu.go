package btree

import "github.com/warpkv/warpkv/gpu"

// Pinned staging of transfers: every upload and download of the GPU engine
// of more than stageMin words goes through a gpu.Pipeline (one ring for
// uploads, one for downloads), so that the copies between Go and pinned
// memory (on stageWorkers of par.Shared's workers) overlap the DMAs.
// Pageable copies make the driver stage through its own small buffers,
// well below the link's speed.
const (
	stageChunk   = 1 << 21 // uint64 elements per pinned buffer (16 MiB; 4 MiB chunks measured slower: per-chunk host overhead)
	stageBufs    = 4       // pinned buffers each way: chunks in flight
	stageMin     = 1 << 16 // smaller transfers (in 8-byte words) go straight from or to Go memory
	stageWorkers = 16      // goroutines copying a chunk to or from pinned memory (par.Shared; 10M lookups: 2.22 G/s on 16, 1.86 on 8, H200)
	// stageGrain is the elements a goroutine copies at a time: 128 KiB.
	// 10M lookups from Go slices on the H200 host, copies in with
	// non-temporal stores: 2.68-2.76 G/s, against 2.47-2.54 with 512 KiB
	// pieces and 2.35-2.36 with 512 KiB pieces and ordinary stores, the
	// former default (BENCHMARKS.md, "Staging copies with non-temporal
	// stores").
	stageGrain = 1 << 14
	// batchGrain is the elements a goroutine copies at a time in the
	// uploads of a batch's keys and values from Go slices for its sort
	// (sortDedupe: build, insert, delete; gpu.UploadStagedGrain): 128 KiB, so
	// that a 16 MiB chunk's 128 pieces end close together and its DMA
	// starts sooner (H200, BENCHMARKS.md "B+ tree insert from Go slices:
	// where the first part's time goes": 7.31 ms a call against 7.84 ms
	// with 1 MiB pieces, median of 5 each in one run).
	batchGrain = 1 << 14
)

// stageConfig is the configuration of both rings.
var stageConfig = gpu.PipelineConfig{
	ChunkBytes: 8 * stageChunk, Chunks: stageBufs, Direct: 8 * stageMin, Workers: stageWorkers, Grain: stageGrain,
}

// uploadGrain returns the copy grain of sortDedupe's uploads from Go
// slices: a benchmark's (copyGrain) when set, else batchGrain.
func (g *gpuTree) uploadGrain() int {
	if g.copyGrain > 0 {
		return g.copyGrain
	}
	return batchGrain
}
