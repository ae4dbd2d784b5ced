package btree

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
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
	pin, err := gpu.AllocHost[byte](d, dmaBytes)
	if err != nil {
		b.Fatal(err)
	}
	defer pin.Free()
	sink, err := gpu.AllocHost[byte](d, 16*region)
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Free()
	dev, err := gpu.Alloc[byte](d, dmaBytes)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Free()
	s, err := d.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var ev [2]*gpu.Event
	for i := range ev {
		if ev[i], err = d.NewEvent(); err != nil {
			b.Fatal(err)
		}
		defer ev[i].Close()
	}
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
				if err := ev[0].Record(s); err != nil {
					b.Fatal(err)
				}
				if err := dev.Write(s, 0, pin.Slice()); err != nil {
					b.Fatal(err)
				}
				if err := ev[1].Record(s); err != nil {
					b.Fatal(err)
				}
				if err := ev[1].Synchronize(); err != nil {
					b.Fatal(err)
				}
				wall += time.Since(t0)
				copied += bytes.Load() - c0
				stop.Store(true)
				wg.Wait()
				el, err := gpu.Elapsed(ev[0], ev[1])
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
	pin, err := gpu.AllocHost[byte](d, bytes)
	if err != nil {
		b.Fatal(err)
	}
	defer pin.Free()
	dev, err := gpu.Alloc[byte](d, bytes)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Free()
	s, err := d.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var ev [2]*gpu.Event
	for i := range ev {
		if ev[i], err = d.NewEvent(); err != nil {
			b.Fatal(err)
		}
		defer ev[i].Close()
	}
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
				par.Shared().For(bytes, c.piece, 16, func(lo, hi int) { copy(pin.Slice()[lo:hi], src[lo:hi]) })
				write += time.Since(t0)
				if c.evicted {
					par.Shared().For(len(big), 512<<10, 16, func(lo, hi int) { copy(sink[lo:hi], big[lo:hi]) })
				}
				if err := errors.Join(ev[0].Record(s), dev.Write(s, 0, pin.Slice()), ev[1].Record(s), ev[1].Synchronize()); err != nil {
					b.Fatal(err)
				}
				el, err := gpu.Elapsed(ev[0], ev[1])
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

// BenchmarkGPUInsertRing inserts 10M new keys from Go slices into the
// 100M-key tree (built again before every run, untimed), as
// BenchmarkGPUInsertSteps' default form, with the upload ring's chunk and
// chunks, the inserts' ramp (gpu.UploadRamped), the keys' parts (cuts in
// eighths of the batch: 5 is the default's 5/8 first, 3+6 three parts of
// 3/8, 3/8 and 2/8), the copying workers and their pieces, and whether
// the copy runs without a barrier between chunks (streamed,
// gpu.UploadStreamed) set per case, and logs the
// last call's steps: where the keys' first part arrives on the device
// against the host's copy of it.
func BenchmarkGPUInsertRing(b *testing.B) {
	d := gputest.Device(b)
	g := newBenchTree(b, d, DefaultOrder)
	gt := g.e.(*gpuTree)
	defer func() { gt.ramp, gt.cutEighths, gt.streamed, gt.trace = 0, nil, false, nil }()
	const mib = 1 << 20
	for _, c := range []struct {
		chunk, chunks, ramp int
		cuts                []int
		workers, grain      int  // grain in elements: 0 the ring's (stageGrain, 512 KiB)
		streamed            bool // gpu.UploadStreamed
	}{
		{16 * mib, 4, -1, []int{5}, 16, 0, false}, {16 * mib, 4, mib, []int{5}, 16, 0, false}, {16 * mib, 4, mib, []int{4}, 16, 0, false},
		{16 * mib, 4, mib, []int{2, 5}, 16, 0, false}, {16 * mib, 4, mib, []int{3, 6}, 16, 0, false}, {16 * mib, 4, mib, []int{3, 5}, 16, 0, false},
		{16 * mib, 4, mib, []int{2, 4, 6}, 16, 0, false}, {16 * mib, 4, -1, []int{4}, 16, 0, false}, {16 * mib, 4, 256 << 10, []int{5}, 16, 0, false},
		{16 * mib, 4, 256 << 10, []int{3, 6}, 16, 0, false}, {8 * mib, 8, mib, []int{5}, 16, 0, false}, {8 * mib, 8, mib, []int{3, 6}, 16, 0, false},
		{16 * mib, 4, mib, []int{5}, 12, 0, false}, {16 * mib, 4, mib, []int{3, 6}, 12, 0, false}, {16 * mib, 4, mib, []int{5}, 8, 0, false},
		{16 * mib, 4, -1, []int{5}, 16, mib / 8, false}, {16 * mib, 4, mib, []int{5}, 16, mib / 8, false}, {16 * mib, 4, mib, []int{3, 6}, 16, mib / 8, false},
		{16 * mib, 4, -1, []int{5}, 16, mib / 64, false}, {16 * mib, 4, mib, []int{5}, 16, mib / 64, false},
		{16 * mib, 4, -1, []int{5}, 16, 0, true}, {16 * mib, 4, mib, []int{5}, 16, 0, true}, {16 * mib, 4, mib, []int{4}, 16, 0, true},
		{16 * mib, 4, mib, []int{3, 6}, 16, 0, true}, {4 * mib, 16, 256 << 10, []int{5}, 16, 0, true}, {4 * mib, 16, 256 << 10, []int{3, 6}, 16, 0, true},
	} {
		ramp := "0"
		if c.ramp > 0 {
			ramp = fmt.Sprintf("%dKiB", c.ramp>>10)
		}
		cuts := strings.Trim(strings.ReplaceAll(fmt.Sprint(c.cuts), " ", "+"), "[]")
		name := fmt.Sprintf("chunk=%dMiBx%d/ramp=%s/cuts=%s/workers=%d", c.chunk/mib, c.chunks, ramp, cuts, c.workers)
		if c.grain > 0 {
			name += fmt.Sprintf("/grain=%dKiB", 8*c.grain>>10)
		}
		if c.streamed {
			name += "/streamed"
		}
		b.Run(name, func(b *testing.B) {
			cfg := stageConfig
			cfg.ChunkBytes, cfg.Chunks, cfg.Workers = c.chunk, c.chunks, c.workers
			if c.grain > 0 {
				cfg.Grain = c.grain
			}
			if err := setStageConfig(gt, cfg); err != nil {
				b.Fatal(err)
			}
			gt.ramp, gt.cutEighths, gt.streamed, gt.trace = c.ramp, c.cuts, c.streamed, &engine.StepTrace{}
			timeInserts(b, g, func() error { return g.Insert(benchBatch[0], benchBatch[1]) })
		})
	}
	if err := setStageConfig(gt, stageConfig); err != nil {
		b.Fatal(err)
	}
}

// TestGPUUploadRamped checks the inserts' ramped uploads through rings of
// small chunks (64 KiB or 512 KiB, three of them, so that the chunks reuse
// slots whose DMAs may still run; a streamed chunk of 512 KiB is copied in
// several pieces): every word arrives where it belongs
// for sizes around the ramp's steps and for ramps of 4 KiB and 24 KiB and
// none, ramped (gpu.UploadRamped) and streamed (gpu.UploadStreamed), and
// inserts of batches large enough to be split in parts (two,
// three and four), with repeated keys across the parts, through that ring
// leave node arrays equal to the CPU engine's word for word.
func TestGPUUploadRamped(t *testing.T) {
	d := gputest.Device(t)
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
		for _, streamed := range []bool{false, true} {
			up := gpu.UploadRamped[uint64]
			if streamed {
				up = gpu.UploadStreamed[uint64]
			}
			for _, ramp := range []int{0, 4 << 10, 24 << 10} {
				for _, m := range []int{1, 511, 512, 513, 3 * 1024, 8191, 40_000, n} {
					for i := range src[:m] {
						src[i] = uint64(ramp)<<40 ^ uint64(m)<<20 ^ uint64(i)
					}
					if err := up(p, s, dev, 5, src[:m], ramp); err != nil {
						t.Fatal(err)
					}
					got := make([]uint64, m)
					if err := errors.Join(dev.Read(s, 5, got), s.Synchronize()); err != nil {
						t.Fatal(err)
					}
					for i, x := range got {
						if x != src[i] {
							t.Fatalf("chunk %d, streamed %v, ramp %d, %d words: word %d is %#x, want %#x", chunk, streamed, ramp, m, i, x, src[i])
						}
					}
				}
			}
		}
		for _, streamed := range []bool{false, true} {
			for _, cuts := range [][]int{nil, {3, 6}, {2, 4, 6}} {
				if err := rampedInserts(d, cfg, cuts, streamed); err != nil {
					t.Fatalf("chunk %d, parts cut at %v eighths, streamed %v: %v", chunk, cuts, streamed, err)
				}
			}
		}
	}
}

// rampedInserts builds a GPU tree of order 16 with the upload ring cfg, a
// ramp of 4 KiB and the keys' parts cut at cuts (eighths; nil: the
// default two parts), streamed (gpu.UploadStreamed) or not, and a CPU
// tree, from a batch of 3*stageMin+777
// pairs with repeated keys, inserts two more such batches into both and
// compares their node arrays after every batch.
func rampedInserts(d *gpu.Device, cfg gpu.PipelineConfig, cuts []int, streamed bool) error {
	g, err := Open(Options{Order: 16, GPU: d})
	if err != nil {
		return err
	}
	defer g.Close()
	gt := g.e.(*gpuTree)
	if err := setStageConfig(gt, cfg); err != nil {
		return err
	}
	gt.ramp, gt.cutEighths, gt.streamed = 4<<10, cuts, streamed
	c, err := Open(Options{Order: 16, Device: "cpu"})
	if err != nil {
		return err
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(22, uint64(len(cuts))))
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
