package btree

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/par"
)

// BenchmarkGPUUploadContention measures apart whether host memory traffic
// slows the DMAs from the pinned ring: one 48 MiB DMA from pinned memory
// to the device (timed by CUDA events) while 0, 8 or 15 goroutines copy
// Go memory into another pinned buffer in 512 KiB pieces (as the ring's
// workers do). dma-GB/s is the DMA's rate, copy-GB/s the copiers' over the
// same wall time.
func BenchmarkGPUUploadContention(b *testing.B) {
	d := gputest.Device(b)
	const dmaBytes, region = 48 << 20, 16 << 20
	r := newDMARig(b, d, dmaBytes)
	sink, err := gpu.AllocHost[byte](d, 16*region)
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Free()
	src := make([]byte, 16*region)
	for i := range src {
		src[i] = byte(i)
	}
	for _, w := range []int{0, 8, 15} {
		b.Run(fmt.Sprintf("copiers=%d", w), func(b *testing.B) {
			var dma, wall time.Duration
			var copied int64
			for b.Loop() {
				var stop atomic.Bool
				var bytes atomic.Int64
				var wg, started sync.WaitGroup
				for i := range w {
					wg.Add(1)
					started.Add(1)
					go func() {
						defer wg.Done()
						from, to := src[i*region:(i+1)*region], sink.Slice()[i*region:(i+1)*region]
						started.Done()
						for n := 0; !stop.Load(); n++ {
							o := n % (region / (512 << 10)) * (512 << 10)
							copy(to[o:o+512<<10], from[o:o+512<<10])
							bytes.Add(512 << 10)
							runtime.Gosched() // the timing goroutine needs a thread too
						}
					}()
				}
				started.Wait()
				runtime.Gosched()
				t0, c0 := time.Now(), bytes.Load()
				el, err := r.dma()
				wall += time.Since(t0)
				copied += bytes.Load() - c0
				stop.Store(true)
				wg.Wait()
				if err != nil {
					b.Fatal(err)
				}
				dma += el
			}
			b.ReportMetric(float64(b.N)*dmaBytes/dma.Seconds()/1e9, "dma-GB/s")
			b.ReportMetric(float64(copied)/wall.Seconds()/1e9, "copy-GB/s")
		})
	}
}

// BenchmarkGPUUploadFresh measures whether a DMA from pinned memory that
// the host has just written (as the ring's chunks are) runs slower than
// one from memory written long before: 16 goroutines copy 48 MiB of Go
// memory into the pinned buffer in pieces of 512 KiB (regular stores, as
// the ring) or 1 MiB (Go's memmove then uses non-temporal stores, which
// leave no dirty lines in the caches), optionally followed by a 256 MiB
// copy elsewhere that evicts the buffer from the caches, then the buffer
// goes to the device in one DMA (timed by CUDA events). write-GB/s is
// the copy's rate, dma-GB/s the DMA's.
func BenchmarkGPUUploadFresh(b *testing.B) {
	d := gputest.Device(b)
	const bytes = 48 << 20
	r := newDMARig(b, d, bytes)
	src, big, sink := make([]byte, bytes), make([]byte, 256<<20), make([]byte, 256<<20)
	for i := range src {
		src[i] = byte(i)
	}
	for _, c := range []struct {
		piece   int
		evicted bool
	}{{512 << 10, false}, {1 << 20, false}, {512 << 10, true}} {
		b.Run(fmt.Sprintf("piece=%dKiB/evicted=%v", c.piece>>10, c.evicted), func(b *testing.B) {
			var dma, write time.Duration
			for b.Loop() {
				t0 := time.Now()
				par.Shared().For(bytes, c.piece, 16, func(lo, hi int) { copy(r.pin.Slice()[lo:hi], src[lo:hi]) })
				write += time.Since(t0)
				if c.evicted {
					par.Shared().For(len(big), 512<<10, 16, func(lo, hi int) { copy(sink[lo:hi], big[lo:hi]) })
				}
				el, err := r.dma()
				if err != nil {
					b.Fatal(err)
				}
				dma += el
			}
			b.ReportMetric(float64(b.N)*bytes/dma.Seconds()/1e9, "dma-GB/s")
			b.ReportMetric(float64(b.N)*bytes/write.Seconds()/1e9, "write-GB/s")
		})
	}
}

// dmaRig is what the upload benchmarks time one DMA with: a pinned
// buffer, a device buffer of the same size, a stream and two events.
type dmaRig struct {
	pin *gpu.HostBuffer[byte]
	dev *gpu.Buffer[byte]
	s   *gpu.Stream
	ev  [2]*gpu.Event
}

// newDMARig allocates a dmaRig of bytes on d, freed when b ends.
func newDMARig(b *testing.B, d *gpu.Device, bytes int) *dmaRig {
	b.Helper()
	r := &dmaRig{}
	var err error
	if r.pin, err = gpu.AllocHost[byte](d, bytes); err == nil {
		b.Cleanup(func() { _ = r.pin.Free() })
		if r.dev, err = gpu.Alloc[byte](d, bytes); err == nil {
			b.Cleanup(func() { _ = r.dev.Free() })
			if r.s, err = d.NewStream(); err == nil {
				b.Cleanup(func() { _ = r.s.Close() })
				for i := range r.ev {
					if r.ev[i], err = d.NewEvent(); err != nil {
						break
					}
					b.Cleanup(func() { _ = r.ev[i].Close() })
				}
			}
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// dma copies the pinned buffer to the device and returns the copy's time
// by CUDA events.
func (r *dmaRig) dma() (time.Duration, error) {
	if err := errors.Join(r.ev[0].Record(r.s), r.dev.Write(r.s, 0, r.pin.Slice()), r.ev[1].Record(r.s), r.ev[1].Synchronize()); err != nil {
		return 0, err
	}
	return gpu.Elapsed(r.ev[0], r.ev[1])
}

// BenchmarkGPUInsertRing inserts 10M new keys from Go slices into the
// 100M-key tree (built again before every run, untimed), as
// BenchmarkGPUInsertSteps' default form, with the pieces the workers copy
// into the upload ring (copyGrain: 512 KiB is the ring's stageGrain, the
// uploads' grain before batchGrain's 128 KiB; 1 MiB makes Go's memmove use
// non-temporal stores), and reports the whole calls' median and fastest
// and logs the last call's steps: where the keys' first part arrives on
// the device against the host's copy of it.
func BenchmarkGPUInsertRing(b *testing.B) {
	d := gputest.Device(b)
	g := newBenchTree(b, d, DefaultOrder)
	gt := g.e.(*gpuTree)
	defer func() { gt.copyGrain, gt.trace = 0, nil }()
	for _, kib := range []int{512, 128, 64, 256, 1024} {
		b.Run(fmt.Sprintf("grain=%dKiB", kib), func(b *testing.B) {
			gt.copyGrain, gt.trace = kib<<10/8, &engine.StepTrace{}
			timeInserts(b, g, func() error { return g.Insert(benchBatch[0], benchBatch[1]) })
		})
	}
}

// TestGPUUploadGrain checks sortDedupe's uploads in pieces of a given
// grain through a ring of small chunks (64 KiB and 512 KiB, three of
// them, so that chunks reuse slots whose DMAs may still run): every word
// arrives where it belongs for grains of the ring's own, 1000 elements
// (pieces that do not divide a chunk) and 16Ki, and inserts of batches
// large enough to be split in two parts, with repeated keys, through that
// ring with a grain of 1000 leave node arrays equal to the CPU engine's
// word for word.
func TestGPUUploadGrain(t *testing.T) {
	d := gputest.Device(t)
	s := gputest.Stream(t, d)
	const n = 400_003
	dev, err := gpu.Alloc[uint64](d, n+5)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free()
	src := make([]uint64, n)
	for _, chunk := range []int{64 << 10, 512 << 10} {
		cfg := stageConfig
		cfg.ChunkBytes, cfg.Chunks, cfg.Direct = chunk, 3, 0
		p := gpu.NewPipeline(d, cfg)
		defer p.Close()
		for _, grain := range []int{0, 1000, 1 << 14} {
			for _, m := range []int{1, 511, 8191, 40_000, n} {
				for i := range src[:m] {
					src[i] = uint64(grain)<<40 ^ uint64(m)<<20 ^ uint64(i)
				}
				if err := gpu.UploadStagedGrain(p, s, dev, 5, src[:m], grain); err != nil {
					t.Fatal(err)
				}
				got := make([]uint64, m)
				if err := errors.Join(dev.Read(s, 5, got), s.Synchronize()); err != nil {
					t.Fatal(err)
				}
				for i, x := range got {
					if x != src[i] {
						t.Fatalf("chunk %d, grain %d, %d words: word %d is %#x, want %#x", chunk, grain, m, i, x, src[i])
					}
				}
			}
		}
		if err := grainInserts(d, cfg, 1000); err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
	}
}

// grainInserts builds a GPU tree of order 16 with the upload ring cfg and
// sortDedupe's copy grain, and a CPU tree, from a batch of 3*stageMin+777
// pairs with repeated keys, inserts two more such batches into both and
// compares their node arrays after every batch.
func grainInserts(d *gpu.Device, cfg gpu.PipelineConfig, grain int) error {
	g, err := Open(Options{Order: 16, GPU: d})
	if err != nil {
		return err
	}
	defer g.Close()
	gt := g.e.(*gpuTree)
	if err := setStageConfig(gt, cfg); err != nil {
		return err
	}
	gt.copyGrain = grain
	c, err := Open(Options{Order: 16, Device: "cpu"})
	if err != nil {
		return err
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(22, uint64(grain)))
	for round := range 3 {
		keys, vals := make([]uint64, 3*stageMin+777), make([]uint64, 3*stageMin+777)
		for i := range keys {
			keys[i], vals[i] = rng.Uint64()>>1, rng.Uint64()
			if i > 0 && rng.IntN(10) == 0 {
				keys[i] = keys[rng.IntN(i)]
			}
		}
		if err := buildOrInsert(round, keys, vals, g, c); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		if err := sameNodes(g, c); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	return g.Check()
}
