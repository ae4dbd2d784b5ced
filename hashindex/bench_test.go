package hashindex

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchBuckets is the table size of the benchmarks: 2^20 buckets, 8 Mi
// cells, a 64 MiB table.
const benchBuckets = 1 << 20

// benchBatches are the batch sizes the benchmarks run.
var benchBatches = []int{1 << 10, 1 << 16, 1 << 20}

// benchKeys returns n random hashes and locations 1..n.
func benchKeys(n int, seed uint64) ([]uint64, []uint32) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = r.Uint64()
	}
	return hashes, seq(1, n)
}

// newBenchIndex returns a CPU index of benchBuckets buckets, its memory
// touched once so page faults stay out of the timings.
func newBenchIndex(b *testing.B) *Index {
	ix, err := Open(Options{Buckets: benchBuckets, Device: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Reset(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	return ix
}

// reportOps reports jobs per second.
func reportOps(b *testing.B, jobs int) {
	b.ReportMetric(float64(jobs)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mops/s")
}

// BenchmarkCPUInsert inserts batches of new keys, emptying the table (not
// timed) before it passes half load.
func BenchmarkCPUInsert(b *testing.B) {
	for _, n := range benchBatches {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			ix := newBenchIndex(b)
			const rounds = 8
			var hs [rounds][]uint64
			var ls [rounds][]uint32
			for i := range rounds {
				hs[i], ls[i] = benchKeys(n, uint64(i))
			}
			var dropped []Dropped
			var err error
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if ix.Stats().Entries+uint64(n) > uint64(ix.Capacity()/2) {
					b.StopTimer()
					ix.Reset()
					b.StartTimer()
				}
				if dropped, err = ix.Insert(hs[i%rounds], ls[i%rounds], dropped[:0]); err != nil {
					b.Fatal(err)
				}
			}
			reportOps(b, n)
		})
	}
}

// halfFullIndex returns newBenchIndex holding Capacity/2 random keys
// (seed 99), and those keys and their locations.
func halfFullIndex(b *testing.B) (*Index, []uint64, []uint32) {
	ix := newBenchIndex(b)
	fill, locs := benchKeys(ix.Capacity()/2, 99)
	if _, err := ix.Insert(fill, locs, nil); err != nil {
		b.Fatal(err)
	}
	return ix, fill, locs
}

// BenchmarkCPUSearch searches batches of keys in a half-full table, half of
// them present.
func BenchmarkCPUSearch(b *testing.B) {
	for _, n := range benchBatches {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			ix, fill, _ := halfFullIndex(b)
			probe, _ := benchKeys(n, 100)
			copy(probe[:n/2], fill)
			out := make([]uint32, n)
			for b.Loop() {
				if err := ix.Search(probe, out); err != nil {
					b.Fatal(err)
				}
			}
			reportOps(b, n)
		})
	}
}

// BenchmarkCPUDelete deletes a batch of present keys and inserts it back
// (not timed) each iteration, in a half-full table.
func BenchmarkCPUDelete(b *testing.B) {
	for _, n := range benchBatches {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			ix, fill, locs := halfFullIndex(b)
			hs, ls := fill[:n], locs[:n]
			found := make([]bool, n)
			for b.Loop() {
				if err := ix.Delete(hs, ls, found); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := ix.Insert(hs, ls, nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			reportOps(b, n)
		})
	}
}
