package hashindex

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"warpkv/gpu"
	"warpkv/internal/gputest"
)

// TestChunkSweep times the host-level calls, slice and staged, on a 1 GiB
// table at half load for several chunk sizes, against the pinned transfer
// limit (the bytes a job moves over the bus at the pinned bandwidths
// measured here), to choose pipeChunk and stagedChunk. It runs only with
// WARPKV_HIX_SWEEP=1 and logs a line per measurement (median of 5 after a
// warm-up).
func TestChunkSweep(t *testing.T) {
	if os.Getenv("WARPKV_HIX_SWEEP") != "1" {
		t.Skip("set WARPKV_HIX_SWEEP=1 to run the chunk size sweep")
	}
	d := gputest.Device(t)
	h2d, d2h := pinnedBandwidth(t, d, 256<<20)
	t.Logf("pinned host->device %.1f GB/s, device->host %.1f GB/s", h2d/1e9, d2h/1e9)
	ix, err := New(Options{Buckets: 1 << 24, GPU: d})
	if err != nil {
		t.Fatal(err)
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
			t.Fatal(err)
		}
	}
	median := func(run, prepare func() error) float64 {
		var secs []float64
		for k := range 6 {
			if prepare != nil {
				if err := prepare(); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			if err := run(); err != nil {
				t.Fatal(err)
			}
			if k > 0 {
				secs = append(secs, time.Since(start).Seconds())
			}
		}
		slices.Sort(secs)
		return secs[len(secs)/2]
	}
	for _, n := range []int{1 << 20, 1 << 22, 1 << 24} {
		probes := make([]uint64, n)
		keys := make([]uint64, n)
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
			t.Fatal(err)
		}
		report := func(chunk int, kind, op string, in, outBytes int, sec float64) {
			limit := float64(in+outBytes) / (float64(in)/h2d + float64(outBytes)/d2h)
			t.Logf("sweep n=2^%d chunk=2^%d %s %-6s %8.3f ms %6.3f G jobs/s %.2fx pinned transfer limit",
				log2(n), log2(chunk), kind, op, sec*1e3, float64(n)/sec/1e9, float64(n)*float64(in+outBytes)/sec/limit)
		}
		for _, chunk := range []int{1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22} {
			ix.gpu.chunkJobs, ix.gpu.stagedChunkJobs = chunk, chunk
			for _, staged := range []bool{false, true} {
				if (!staged && chunk < 1<<20) || (staged && chunk > 1<<21) {
					continue
				}
				var search, insert, remove func() error
				if staged {
					search = func() error { return ix.SearchStaged(st, n) }
					insert = func() error { _, err := ix.InsertStaged(st, n, nil); return err }
					remove = func() error { return ix.DeleteStaged(st, n, nil) }
				} else {
					search = func() error { return ix.Search(probes, out) }
					insert = func() error { _, err := ix.Insert(keys, locs, nil); return err }
					remove = func() error { return ix.Delete(keys, locs, found) }
				}
				kind := map[bool]string{false: "slices", true: "staged"}[staged]
				copy(st.Hashes(), probes)
				report(chunk, kind, "search", 8, 4, median(search, nil))
				copy(st.Hashes(), keys)
				copy(st.Locs(), locs)
				report(chunk, kind, "insert", 12, 8, median(insert, remove))
				report(chunk, kind, "delete", 12, 4, median(remove, insert))
				if staged && chunk == stagedChunk {
					// The insert without its check for NotFound (the
					// engine called directly), and the check alone.
					unchecked := func() error { return ix.gpu.insertStaged(st, n, nil, func(int, []uint64) {}) }
					report(chunk, kind, "insert without the NotFound check", 12, 8, median(unchecked, remove))
					check := func() error {
						if firstNotFound(st.Locs()[:n], ix.workers) >= 0 {
							t.Fatal("NotFound in the sweep's locations")
						}
						return nil
					}
					t.Logf("sweep n=2^%d NotFound check alone (%d workers) %8.3f ms", log2(n), ix.workers, median(check, nil)*1e3)
				}
			}
		}
		if err := st.Free(); err != nil {
			t.Fatal(err)
		}
	}
}

// pinnedBandwidth returns the host-to-device and device-to-host bandwidths,
// in bytes per second, of copies of bytes between pinned and device memory
// (median of 5).
func pinnedBandwidth(t *testing.T, d *gpu.Device, bytes int) (h2d, d2h float64) {
	t.Helper()
	host, err := gpu.AllocHost[byte](d, bytes)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Free()
	dev, err := gpu.Alloc[byte](d, bytes)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free()
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rate := func(copyOnce func() error) float64 {
		var secs []float64
		for range 5 {
			start := time.Now()
			if err := copyOnce(); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
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
