package art

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/par"
)

// BenchmarkGPUKeyPack times the host's side of an insert's key part at
// 100M (half of 10M 16-byte keys: 80 MB, randomKeys) in pieces, to say
// what bounds the packing: copy, a parallel copy in partGrain pieces
// from the Go slice into a pinned ring of transferChunks x
// transferChunk bytes, one chunk after the other, no DMA (workers: all
// cores or half of them; dst=go: into Go memory instead of pinned);
// dma, the pinned ring's chunks to the device alone; upload, the
// engine's gpu.UploadStagedGrain (the copy with each chunk's DMA behind
// it, synchronized at the end; also through rings of 2, 4 and 8 MiB
// chunks); copy and upload also beside a cuMemFree
// of 2 GB, and upload beside a cuMemAlloc of 3 GB. It reports GB/s of
// the part's bytes.
func BenchmarkGPUKeyPack(b *testing.B) {
	d := gputest.Device(b)
	kb, _ := randomKeys(0, stepsBatchKeys/2)
	src := kb.Data
	n := len(src)
	s := gputest.Stream(b, d)
	dst, err := gpu.Alloc[byte](d, n)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Free()
	var ring [transferChunks][]byte
	for i := range ring {
		h, err := gpu.AllocHost[byte](d, transferChunk)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Free()
		ring[i] = h.Slice()
		clear(ring[i]) // touched once, as the engine's ring is after its first call
	}
	goRing := make([]byte, transferChunks*transferChunk)
	copyPart := func(workers int, pinned bool) {
		for c, i := 0, 0; i < n; c, i = c+1, i+transferChunk {
			chunk := src[i:min(i+transferChunk, n)]
			to := ring[c%transferChunks][:len(chunk)]
			if !pinned {
				to = goRing[(c%transferChunks)*transferChunk:][:len(chunk)]
			}
			par.Shared().For(len(chunk), partGrain, workers, func(lo, hi int) { copy(to[lo:hi], chunk[lo:hi]) })
		}
	}
	all := runtime.GOMAXPROCS(0)
	// timed runs f, timed alone; run reports its GB/s (the last run's).
	timed := func(f func() error) (time.Duration, error) {
		t0 := time.Now()
		err := f()
		return time.Since(t0), err
	}
	runT := func(name string, f func() (time.Duration, error)) {
		b.Run(name, func(b *testing.B) {
			var last time.Duration
			for b.Loop() {
				dt, err := f()
				if err != nil {
					b.Fatal(err)
				}
				last = dt
			}
			b.ReportMetric(float64(n)/last.Seconds()/1e9, "GB/s")
		})
	}
	run := func(name string, f func() error) { runT(name, func() (time.Duration, error) { return timed(f) }) }
	for _, w := range []int{all, all / 2} {
		run(fmt.Sprintf("copy,workers=%d", w), func() error { copyPart(w, true); return nil })
	}
	run(fmt.Sprintf("copy,workers=%d,dst=go", all), func() error { copyPart(all, false); return nil })
	run("dma", func() error {
		for c, i := 0, 0; i < n; c, i = c+1, i+transferChunk {
			if err := dst.Write(s, i, ring[c%transferChunks][:min(transferChunk, n-i)]); err != nil {
				return err
			}
		}
		return s.Synchronize()
	})
	p := gpu.NewPipeline(d, gpu.PipelineConfig{ChunkBytes: transferChunk, Chunks: transferChunks, Direct: transferDirect})
	defer p.Close()
	upload := func() error { return firstErr(gpu.UploadStagedGrain(p, s, dst, 0, src, partGrain), s.Synchronize()) }
	run("upload", upload)
	// The same through rings of smaller chunks (the same 64 MiB in all):
	// the first DMA starts sooner and the last one ends sooner after the
	// copy.
	for _, c := range []int{2 << 20, 4 << 20, 8 << 20} {
		pc := gpu.NewPipeline(d, gpu.PipelineConfig{ChunkBytes: c, Chunks: transferChunks * transferChunk / c, Direct: transferDirect})
		defer pc.Close()
		run(fmt.Sprintf("upload,chunk=%dMiB", c>>20), func() error {
			return firstErr(gpu.UploadStagedGrain(pc, s, dst, 0, src, partGrain), s.Synchronize())
		})
	}
	// The same beside a cuMemFree of 2 GB on another goroutine (as an
	// insert's upload runs beside the frees of the batch before it,
	// freeBeside): a slower copy says the host's memory or cores are
	// shared; a slower upload alone, the driver's submissions wait.
	beside := func(f func() error) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			big, err := gpu.Alloc[byte](d, 2<<30)
			if err != nil {
				return 0, err
			}
			done := make(chan error)
			go func() { done <- big.Free() }()
			dt, err := timed(f)
			return dt, firstErr(err, <-done)
		}
	}
	runT(fmt.Sprintf("copy,workers=%d,beside=free2GB", all), beside(func() error { copyPart(all, true); return nil }))
	runT("upload,beside=free2GB", beside(upload))
	// And beside a cuMemAlloc of 3 GB (as growAhead allocates the N16
	// pool it grows beside the upload), freed after the timed part.
	runT("upload,beside=alloc3GB", func() (time.Duration, error) {
		done := make(chan *gpu.Buffer[byte])
		go func() {
			big, _ := gpu.Alloc[byte](d, 3<<30)
			done <- big
		}()
		dt, err := timed(upload)
		if big := <-done; big != nil {
			err = firstErr(err, big.Free())
		}
		return dt, err
	})
}
