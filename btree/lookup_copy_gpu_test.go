package btree

import (
	"errors"
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// setStageConfig replaces g's pinned staging rings by rings of c (the
// benchmarks compare worker counts and grains).
func setStageConfig(g *gpuTree, c gpu.PipelineConfig) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := errors.Join(g.s.Synchronize(), g.up.Close(), g.down.Close()); err != nil {
		return err
	}
	g.up, g.down = gpu.NewPipeline(g.dev, c), gpu.NewPipeline(g.dev, c)
	return nil
}

// BenchmarkGPULookupCopies looks up 10M keys (half absent) in one 100M-key
// tree of the default order, as bench btree's "lookup 10M in 100M": the
// whole call from Go slices with the pinned staging rings of 16 MiB chunks
// copied on 16 goroutines taking 8Ki to 128Ki elements at a time (64 KiB
// to 1 MiB of keys and values) and on 8 taking the default grain, rings
// of 8 and 32 MiB chunks at the default grain, and from a pinned
// Staging (no host copies), the
// reference the host copies are measured against. Each form is called
// once untimed first (pinning its rings). host-GB/s is the bytes
// the host copies into and out of the rings (keys in, values and flags
// out: 17 bytes a key) over the whole call.
func BenchmarkGPULookupCopies(b *testing.B) {
	d := gputest.Device(b)
	g := newBenchTree(b, d, DefaultOrder)
	gt := g.e.(*gpuTree)
	q := benchQueries
	vals, found := make([]uint64, len(q)), make([]bool, len(q))
	for _, c := range []struct{ workers, grain, chunkMiB int }{
		{16, 1 << 13, 16}, {16, 1 << 14, 16}, {16, 1 << 15, 16}, {16, 1 << 16, 16}, {16, 1 << 17, 16}, {8, stageGrain, 16},
		{16, stageGrain, 8}, {16, stageGrain, 32},
	} {
		b.Run(fmt.Sprintf("call/stageWorkers=%d/grain=%d/chunk=%dMiB", c.workers, c.grain, c.chunkMiB), func(b *testing.B) {
			cfg := stageConfig
			cfg.Workers, cfg.Grain, cfg.ChunkBytes = c.workers, c.grain, c.chunkMiB<<20
			if err := setStageConfig(gt, cfg); err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := setStageConfig(gt, stageConfig); err != nil {
					b.Fatal(err)
				}
			}()
			if err := g.Lookup(q, vals, found); err != nil { // pins the new rings, untimed
				b.Fatal(err)
			}
			for b.Loop() {
				if err := g.Lookup(q, vals, found); err != nil {
					b.Fatal(err)
				}
			}
			reportPhases(b, len(q), g.LastBatch())
			b.ReportMetric(17*float64(len(q))*float64(b.N)/b.Elapsed().Seconds()/1e9, "host-GB/s")
		})
	}
	b.Run("staged", func(b *testing.B) { benchLookupStaged(b, g, q) })
}
