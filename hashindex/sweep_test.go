package hashindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// BenchmarkChunkSweep times the host-level calls, slice and staged, on a
// 1 GiB table at half load for several chunk sizes, to choose pipeChunk
// and stagedChunk: one sub-benchmark per batch size, chunk size, call kind
// and operation, reporting G jobs/s and the fraction of the pinned
// transfer limit (the bytes a job moves over the bus at the pinned
// bandwidths measured first). It needs a GPU, e.g.
//
//	go test ./hashindex -run '^$' -bench ChunkSweep -benchtime 5x
func BenchmarkChunkSweep(b *testing.B) {
	d := gputest.Device(b)
	h2d, d2h := pinnedBandwidth(b, d, 256<<20)
	b.Logf("pinned host->device %.1f GB/s, device->host %.1f GB/s", h2d/1e9, d2h/1e9)
	ix, err := Open(Options{Buckets: 1 << 24, GPU: d})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	r := rand.New(rand.NewPCG(1, 2))
	fillN := ix.Capacity() / 2
	fill := make([]uint64, fillN)
	for i := range fill {
		fill[i] = r.Uint64()
	}
	for i := 0; i < fillN; i += 1 << 22 {
		j := min(fillN, i+1<<22)
		if _, err := ix.Insert(fill[i:j], seq(uint32(i+1), j-i), nil); err != nil {
			b.Fatal(err)
		}
	}
	// run times call (b.N times, each after an untimed prepare) and
	// reports its rate against the limit of in and out bytes a job.
	run := func(b *testing.B, n, in, out int, call, prepare func() error) {
		for b.Loop() {
			if prepare != nil {
				b.StopTimer()
				if err := prepare(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		sec := b.Elapsed().Seconds() / float64(b.N)
		limit := float64(in+out) / (float64(in)/h2d + float64(out)/d2h)
		b.ReportMetric(float64(n)/sec/1e9, "Gjobs/s")
		b.ReportMetric(float64(n)*float64(in+out)/sec/limit, "x-pinned-limit")
	}
	for _, n := range []int{1 << 20, 1 << 22, 1 << 24} {
		probes, keys := make([]uint64, n), make([]uint64, n)
		for i := range probes {
			probes[i], keys[i] = r.Uint64(), r.Uint64()
			if i%2 == 0 {
				probes[i] = fill[r.IntN(fillN)]
			}
		}
		locs := seq(uint32(fillN+1), n)
		out, found := make([]uint32, n), make([]bool, n)
		st, err := ix.NewStaging(n)
		if err != nil {
			b.Fatal(err)
		}
		for _, chunk := range []int{1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22} {
			for _, staged := range []bool{false, true} {
				if (!staged && chunk < 1<<20) || (staged && chunk > 1<<21) {
					continue
				}
				var search, insert, remove func() error
				kind := "slices"
				if staged {
					kind = "staged"
					search = func() error { return ix.SearchStaged(st, n) }
					insert = func() error { _, err := ix.InsertStaged(st, n, nil); return err }
					remove = func() error { return ix.DeleteStaged(st, n, nil) }
				} else {
					search = func() error { return ix.Search(probes, out) }
					insert = func() error { _, err := ix.Insert(keys, locs, nil); return err }
					remove = func() error { return ix.Delete(keys, locs, found) }
				}
				name := fmt.Sprintf("n=2^%d/chunk=2^%d/%s", log2(n), log2(chunk), kind)
				set := func() { ix.gpu.chunkJobs, ix.gpu.stagedChunkJobs = chunk, chunk }
				b.Run(name+"/search", func(b *testing.B) {
					set()
					copy(st.Hashes(), probes)
					run(b, n, 8, 4, search, nil)
				})
				b.Run(name+"/insert", func(b *testing.B) {
					set()
					copy(st.Hashes(), keys)
					copy(st.Locs(), locs)
					run(b, n, 12, 8, insert, remove)
					if err := remove(); err != nil {
						b.Fatal(err)
					}
				})
				b.Run(name+"/delete", func(b *testing.B) {
					set()
					copy(st.Hashes(), keys)
					copy(st.Locs(), locs)
					run(b, n, 12, 4, remove, insert)
				})
				if staged && chunk == stagedChunk {
					// The insert without its check for NotFound (the
					// engine called directly), and the check alone.
					b.Run(name+"/insert-unchecked", func(b *testing.B) {
						set()
						unchecked := func() error { return ix.gpu.insertStaged(st, n, nil, func(int, []uint64) {}) }
						run(b, n, 12, 8, unchecked, remove)
						if err := remove(); err != nil {
							b.Fatal(err)
						}
					})
					b.Run(name+"/notfound-check", func(b *testing.B) {
						for b.Loop() {
							if firstNotFound(st.Locs()[:n], ix.workers) >= 0 {
								b.Fatal("NotFound in the sweep's locations")
							}
						}
					})
				}
			}
		}
		ix.gpu.chunkJobs, ix.gpu.stagedChunkJobs = pipeChunk, stagedChunk
		if err := st.Free(); err != nil {
			b.Fatal(err)
		}
	}
}

// pinnedBandwidth returns the host-to-device and device-to-host bandwidths,
// in bytes per second, of copies of bytes between pinned and device memory
// (median of 5).
func pinnedBandwidth(b *testing.B, d *gpu.Device, bytes int) (h2d, d2h float64) {
	b.Helper()
	host, err := gpu.AllocHost[byte](d, bytes)
	if err != nil {
		b.Fatal(err)
	}
	defer host.Free()
	dev, err := gpu.Alloc[byte](d, bytes)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Free()
	s := gputest.Stream(b, d)
	rate := func(copyOnce func() error) float64 {
		var secs []float64
		for range 5 {
			start := time.Now()
			if err := copyOnce(); err != nil {
				b.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
			secs = append(secs, time.Since(start).Seconds())
		}
		slices.Sort(secs)
		return float64(bytes) / secs[2]
	}
	h2d = rate(func() error { return dev.Write(s, 0, host.Slice()) })
	d2h = rate(func() error { return dev.Read(s, 0, host.Slice()) })
	return h2d, d2h
}
