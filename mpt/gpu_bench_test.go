package mpt

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/workload"
)

// gpuBenchSizes are the trie sizes of the GPU benchmarks per data set (the
// paper's 1M pairs; Wiki-like values are ten times larger).
var gpuBenchSizes = map[workload.Dataset]int{workload.YCSB: 1_000_000, workload.ETHT: 1_000_000, workload.Wiki: 100_000}

// reportPhases reports a GPU batch's phases as benchmark metrics (ms).
func reportPhases(b *testing.B, st BatchStats) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(st.Stage), "stage-ms")
	b.ReportMetric(ms(st.Upload), "upload-ms")
	b.ReportMetric(ms(st.Sort), "sort-ms")
	b.ReportMetric(ms(st.Update), "update-ms")
	b.ReportMetric(ms(st.Hash), "hash-ms")
	b.ReportMetric(float64(st.Dirty), "dirty-nodes")
}

// BenchmarkGPUBuild builds a fresh GPU trie from each data set in one
// Update (staging, upload, sort, PhaseNU, PhaseHC, root read back), with
// and without the host copy of the values, and reports pairs/s and the
// last run's phases; the first run's root is checked against the parallel
// CPU engine's. Skipped without a GPU. go test -bench GPUBuild -benchtime 3x
func BenchmarkGPUBuild(b *testing.B) {
	gputest.Device(b)
	for _, ds := range workload.Datasets() {
		keys, values, err := workload.Generate(ds, gpuBenchSizes[ds], 5)
		if err != nil {
			b.Fatal(err)
		}
		for _, host := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/host-values=%v", ds, host), func(b *testing.B) {
				ref := mustNew(Options{Engine: EngineParallel})
				if err := ref.Update(keys, values); err != nil {
					b.Fatal(err)
				}
				want := ref.hash()
				ref.Close()
				var st BatchStats
				for b.Loop() {
					b.StopTimer()
					g := newGPUTestOpts(b, Options{HostValues: host})
					b.StartTimer()
					if err := g.Update(keys, values); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if got := g.hash(); got != want {
						b.Fatalf("gpu root %x, cpu %x", got, want)
					}
					st = g.Stats()
					if err := g.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "pairs/s")
				reportPhases(b, st)
			})
		}
	}
}

// BenchmarkGPUNodeUpdate inserts sparse batches of new uniform keys (1K,
// 10K, 100K) into 1M-pair tries of the YCSB-like and ETHT-like data sets
// with PhaseNU, with LockNU and under the decision model, and reports the
// node update's time and LockNU's restarts (the figures behind the
// decision model). Skipped without a GPU. go test -bench GPUNodeUpdate
// -benchtime 3x
func BenchmarkGPUNodeUpdate(b *testing.B) {
	gputest.Device(b)
	for _, ds := range []workload.Dataset{workload.YCSB, workload.ETHT} {
		keys, values, err := workload.Generate(ds, gpuBenchSizes[ds], 5)
		if err != nil {
			b.Fatal(err)
		}
		r := rand.New(rand.NewPCG(8, 8))
		for _, size := range []int{1000, 10_000, 100_000} {
			nk, nv := make([][]byte, size), make([][]byte, size)
			for i := range nk {
				nk[i], nv[i] = randBytes(r, len(keys[0])), randBytes(r, len(values[0]))
			}
			for _, mode := range gpuModes {
				b.Run(fmt.Sprintf("%s/+%d/mode=%s", ds, size, modeName(mode)), func(b *testing.B) {
					var st BatchStats
					for b.Loop() {
						b.StopTimer()
						g := newGPUTest(b, false, NodeUpdatePhase)
						if err := g.Update(keys, values); err != nil {
							b.Fatal(err)
						}
						g.g.mode = mode
						b.StartTimer()
						if err := g.Update(nk, nv); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						st = g.Stats()
						if err := g.Close(); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					reportPhases(b, st)
					b.ReportMetric(float64(st.Restarts), "restarts")
					b.Logf("%s: %s", st.Algorithm, st.Why)
				})
			}
		}
	}
}

// modeName names a node-update mode in benchmark names.
func modeName(m NodeUpdate) string {
	if m == NodeUpdateAuto {
		return "auto"
	}
	return string(m)
}

// BenchmarkGPUReads measures the GPU engine's batch reads of 100K present
// keys in 1M-pair tries of the YCSB-like and ETHT-like data sets (the
// pairs of mptbench): Lookup (values copied into fresh memory), LookupInto
// (into one reused Values) and ProveBatch, and Lookup and LookupInto with
// the host copy of the values (Options.HostValues: only value ids come
// back). It reports keys/s and the last call's walk part (keys up, walks,
// offsets or ids back) and values part (gather, download and copies) in
// ms. Skipped without a GPU. go test -bench GPUReads -benchtime 20x
func BenchmarkGPUReads(b *testing.B) {
	gputest.Device(b)
	const mptbenchSeed = 0x6d707453656564 // bench.MPTSeed
	for _, ds := range []workload.Dataset{workload.YCSB, workload.ETHT} {
		keys, values, err := workload.Generate(ds, gpuBenchSizes[ds], mptbenchSeed)
		if err != nil {
			b.Fatal(err)
		}
		probe := keys[:100_000]
		for _, host := range []bool{false, true} {
			tr := newGPUTestOpts(b, Options{HostValues: host})
			if err := tr.Update(keys, values); err != nil {
				b.Fatal(err)
			}
			var out Values
			reads := []struct {
				name string
				read func() error
			}{
				{"Lookup", func() error { _, _, err := tr.Lookup(probe); return err }},
				{"LookupInto", func() error { return tr.LookupInto(probe, &out) }},
			}
			if !host {
				reads = append(reads, struct {
					name string
					read func() error
				}{"ProveBatch", func() error { _, err := tr.ProveBatch(probe); return err }})
			}
			for _, r := range reads {
				b.Run(fmt.Sprintf("%s/host-values=%v/%s", ds, host, r.name), func(b *testing.B) {
					for b.Loop() {
						if err := r.read(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.N*len(probe))/b.Elapsed().Seconds(), "keys/s")
					last := tr.LastBatch()
					b.ReportMetric(float64(last.Work)/float64(time.Millisecond), "walk-ms")
					b.ReportMetric(float64(last.Download)/float64(time.Millisecond), "values-ms")
				})
			}
			if err := tr.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
