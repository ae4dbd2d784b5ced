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
	stageGrain   = 1 << 16 // elements a goroutine copies at a time
	// stageRamp is the first and last chunk in bytes of an insert's
	// uploads (gpu.UploadRamped): chunks double from it up to stageChunk
	// and halve back down, so that the first part of the keys starts its
	// DMA after a 1 MiB copy instead of a 16 MiB one and its last DMA ends
	// soon after the host's last copy. Lookups' chunked uploads keep whole
	// chunks (their host copies, not the first DMA, bound them).
	stageRamp = 1 << 20
)

// stageConfig is the configuration of both rings.
var stageConfig = gpu.PipelineConfig{
	ChunkBytes: 8 * stageChunk, Chunks: stageBufs, Direct: 8 * stageMin, Workers: stageWorkers, Grain: stageGrain,
}

// uploadRamp returns the ramp of an insert's uploads from Go slices: a
// benchmark's (ramp; negative: none) when set, else stageRamp.
func (g *gpuTree) uploadRamp() int {
	switch {
	case g.ramp < 0:
		return 0
	case g.ramp > 0:
		return g.ramp
	}
	return stageRamp
}
