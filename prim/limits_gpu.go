package prim

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of the limits kernels (limits.cu).
const (
	limitsBlock       = 256 // threads per block of every limits kernel (a multiple of 8 lanes)
	gatherBlocksPerSM = 32  // gather grid: blocks per SM; each thread loops over many gathers
	fillBlocksPerSM   = 32  // fill grid: blocks per SM, grid-stride
)

// GatherSinkLen is the number of uint32 words the sink of DevGather must
// hold on device d: one per thread of the gather grid.
func GatherSinkLen(d *gpu.Device) int { return d.Properties().SMs * gatherBlocksPerSM * limitsBlock }

// DevFillRandom16 fills b with pseudo-random 16-byte words derived from
// seed, none all zero (so that no hardware path sees compressible zeros),
// on the engine's stream. Cost: one launch writing b once.
func (e *Engine) DevFillRandom16(b *gpu.Buffer[[16]byte], seed uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := e.kernel("limits.cu", "fill_random_v16")
	if err != nil {
		return fmt.Errorf("prim: random fill: %w", err)
	}
	grid := min(gpu.Grid(b.Len(), limitsBlock), e.dev.Properties().SMs*fillBlocksPerSM)
	return f.Launch(e.stream, gpu.D1(grid), gpu.D1(limitsBlock), 0, b, uint64(b.Len()), seed)
}

// DevCopy16 copies src into dst (of the same length) with 16-byte loads
// and stores, one thread per word, on the engine's stream: the streaming
// copy whose rate is the device's practical memory bandwidth. Cost: one
// launch reading src and writing dst once.
func (e *Engine) DevCopy16(dst, src *gpu.Buffer[[16]byte]) error {
	if dst.Len() != src.Len() {
		return fmt.Errorf("prim: copy of %d words into %d", src.Len(), dst.Len())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := e.kernel("limits.cu", "copy_v16")
	if err != nil {
		return fmt.Errorf("prim: copy: %w", err)
	}
	n := src.Len()
	return f.Launch(e.stream, gpu.D1(gpu.Grid(n, limitsBlock)), gpu.D1(limitsBlock), 0, src, dst, uint64(n))
}

// DevGather reads count records of record bytes (32, 64 or 128) at
// pseudo-random positions (from seed) of table, whose length in records
// must be a power of two, folding what it reads into sink
// (GatherSinkLen(d) words) so that the loads are not optimized away, on
// the engine's stream. Cost: one launch of count random record reads.
func (e *Engine) DevGather(table *gpu.Buffer[[16]byte], record int, count, seed uint64, sink *gpu.Buffer[uint32]) error {
	var name string
	switch record {
	case 32, 64, 128:
		name = fmt.Sprintf("gather%d", record)
	default:
		return fmt.Errorf("prim: gather of %d-byte records: want 32, 64 or 128", record)
	}
	records := table.Len() * 16 / record
	if records == 0 || records&(records-1) != 0 {
		return fmt.Errorf("prim: gather table of %d %d-byte records: want a power of two", records, record)
	}
	if sink.Len() < GatherSinkLen(e.dev) {
		return fmt.Errorf("prim: gather sink of %d words: want %d", sink.Len(), GatherSinkLen(e.dev))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := e.kernel("limits.cu", name)
	if err != nil {
		return fmt.Errorf("prim: %s: %w", name, err)
	}
	grid := e.dev.Properties().SMs * gatherBlocksPerSM
	return f.Launch(e.stream, gpu.D1(grid), gpu.D1(limitsBlock), 0, table, uint64(records-1), count, seed, sink)
}
