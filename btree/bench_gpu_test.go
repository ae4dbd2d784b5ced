package btree

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// The GPU engine's benchmarks on the paper's large cases (a tree of 100M
// keys; batches of 10M): build, insert and delete, lookups (the whole call
// and the kernel alone) and range queries, reporting keys per second and
// the phases of LastBatch. They need a GPU (they skip without one) and
// about 4 GB of host memory for the inputs, e.g.
//
//	go test ./btree -run '^$' -bench 'GPU' -benchtime 3x

const (
	benchTreeKeys  = 100_000_000
	benchBatchKeys = 10_000_000
)

var (
	benchInputsOnce sync.Once
	benchTree       [2][]uint64 // keys, values of the 100M-key tree
	benchQueries    []uint64    // 10M lookups, half present (random order), half absent
	benchBatch      [2][]uint64 // 10M new pairs
)

// parallelKeys returns n keys SplitMix64(seed, i) and values i, on all
// cores.
func parallelKeys(n int, seed uint64) ([]uint64, []uint64) {
	k, v := make([]uint64, n), make([]uint64, n)
	par.For(n, 1<<16, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k[i], v[i] = prim.SplitMix64(seed, uint64(i)), uint64(i)
		}
	})
	return k, v
}

// benchInputs generates the inputs once per process.
func benchInputs() {
	benchInputsOnce.Do(func() {
		benchTree[0], benchTree[1] = parallelKeys(benchTreeKeys, 1)
		benchQueries, _ = parallelKeys(benchBatchKeys, 1)
		for i := 1; i < len(benchQueries); i += 2 {
			benchQueries[i] = prim.SplitMix64(7, uint64(i)) // misses
		}
		benchBatch[0], benchBatch[1] = parallelKeys(benchBatchKeys, 2)
	})
}

// reportPhases reports keys per second over the loop and the last batch's
// phases in milliseconds.
func reportPhases(b *testing.B, keys int, lb engine.Timings) {
	b.ReportMetric(float64(b.N)*float64(keys)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
	for _, p := range []struct {
		name string
		ms   float64
	}{{"upload-ms", ms(lb.Upload)}, {"sort-ms", ms(lb.Sort)}, {"work-ms", ms(lb.Work)}, {"download-ms", ms(lb.Download)}} {
		b.ReportMetric(p.ms, p.name)
	}
}

// newBenchTree returns a GPU tree of the given order holding the 100M-key
// tree.
func newBenchTree(b *testing.B, d *gpu.Device, order int) *Tree {
	b.Helper()
	benchInputs()
	g, err := Open(Options{Order: order, GPU: d})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	if err := g.Build(benchTree[0], benchTree[1]); err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkGPUBuild builds trees of 10M and 100M keys (orders 32 to 256 at
// 100M) from unsorted pairs, transfers included.
func BenchmarkGPUBuild(b *testing.B) {
	d := gputest.Device(b)
	benchInputs()
	for _, c := range []struct{ order, n int }{{64, 10_000_000}, {64, benchTreeKeys}, {32, benchTreeKeys}, {128, benchTreeKeys}, {256, benchTreeKeys}} {
		b.Run(fmt.Sprintf("order=%d/keys=%d", c.order, c.n), func(b *testing.B) {
			g, err := Open(Options{Order: c.order, GPU: d})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			for b.Loop() {
				if err := g.Build(benchTree[0][:c.n], benchTree[1][:c.n]); err != nil {
					b.Fatal(err)
				}
			}
			reportPhases(b, c.n, g.LastBatch())
		})
	}
}

// BenchmarkGPUInsert inserts 10M new keys into the 100M-key tree (deleting
// them again between runs, untimed).
func BenchmarkGPUInsert(b *testing.B) {
	g := newBenchTree(b, gputest.Device(b), DefaultOrder)
	var lb engine.Timings
	for b.Loop() {
		if err := g.Insert(benchBatch[0], benchBatch[1]); err != nil {
			b.Fatal(err)
		}
		lb = g.LastBatch()
		b.StopTimer()
		if _, err := g.Delete(benchBatch[0]); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportPhases(b, benchBatchKeys, lb)
}

// BenchmarkGPUInsertSteps inserts 10M new keys into a freshly built
// 100M-key tree (built again before every run, untimed), as bench btree's
// "insert 10M uniform into 100M", with the keys uploaded in two halves
// (uploadSortHalves) or whole, the leaves merged by a warp per leaf
// (bt_merge_leaves_E) or over flattened entries, the values from Go slices
// merged in once copied or scattered last (lateValues), from Go slices or from a
// pinned Staging (InsertStaged), and logs where the last run's time went:
// every step's device time (CUDA events), host time and host
// synchronizations (engine.StepTrace).
func BenchmarkGPUInsertSteps(b *testing.B) {
	d := gputest.Device(b)
	for _, c := range []struct {
		workers int
		halves  bool
		flat    bool
		staged  bool
		late    bool
	}{{stageWorkers, true, false, false, false}, {stageWorkers, true, false, false, true}, {stageWorkers, false, false, false, false},
		{stageWorkers, true, true, false, false}, {stageWorkers, true, false, true, false}} {
		name := fmt.Sprintf("stageWorkers=%d/halves=%v/flatMerge=%v/lateValues=%v", c.workers, c.halves, c.flat, c.late)
		if c.staged {
			name = "staged/" + name
		}
		b.Run(name, func(b *testing.B) {
			g := newBenchTree(b, d, DefaultOrder)
			gt := g.e.(*gpuTree)
			cfg := stageConfig
			cfg.Workers = c.workers
			if err := setStageConfig(gt, cfg); err != nil {
				b.Fatal(err)
			}
			gt.trace = &engine.StepTrace{}
			gt.flatMerge = c.flat
			gt.wholeUpload = !c.halves
			gt.lateValues = c.late
			insert := func() error { return g.Insert(benchBatch[0], benchBatch[1]) }
			if c.staged {
				st, err := g.NewStaging(benchBatchKeys)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Free()
				copy(st.Keys, benchBatch[0])
				copy(st.Values, benchBatch[1])
				insert = func() error { return g.InsertStaged(st, benchBatchKeys) }
			}
			timeInserts(b, g, insert)
		})
	}
}

// timeInserts times insert (10M new keys) into the 100M-key tree g, built
// again before every run (untimed), reports the phases of the last call,
// the whole calls' median and fastest (call-ms, min-call-ms) and logs the
// last call's steps (g's engine traced), and checks the number of keys
// after it.
func timeInserts(b *testing.B, g *Tree, insert func() error) {
	b.Helper()
	var lb engine.Timings
	var calls []time.Duration
	for b.Loop() {
		b.StopTimer()
		if err := g.Build(benchTree[0], benchTree[1]); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := insert(); err != nil {
			b.Fatal(err)
		}
		lb = g.LastBatch()
		calls = append(calls, lb.Total)
	}
	reportPhases(b, benchBatchKeys, lb)
	slices.Sort(calls)
	b.ReportMetric(ms(calls[len(calls)/2]), "call-ms")
	b.ReportMetric(ms(calls[0]), "min-call-ms")
	steps, err := g.e.(*gpuTree).trace.Steps()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("last insert (whole call %.3f ms):\n%s", ms(lb.Total), engine.FormatSteps(steps))
	if g.Len() != benchTreeKeys+benchBatchKeys {
		b.Fatalf("%d keys after the insert, want %d", g.Len(), benchTreeKeys+benchBatchKeys)
	}
}

// BenchmarkGPUDelete deletes 10M keys from a 110M-key tree (inserting them
// again between runs, untimed).
func BenchmarkGPUDelete(b *testing.B) {
	g := newBenchTree(b, gputest.Device(b), DefaultOrder)
	var lb engine.Timings
	for b.Loop() {
		b.StopTimer()
		if err := g.Insert(benchBatch[0], benchBatch[1]); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := g.Delete(benchBatch[0]); err != nil {
			b.Fatal(err)
		}
		lb = g.LastBatch()
	}
	reportPhases(b, benchBatchKeys, lb)
	if err := g.Check(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGPULookup looks up 10M keys (half absent) in the 100M-key tree
// of orders 32 to 256: the whole call from Go slices, and the kernel alone
// on keys already on the device.
func BenchmarkGPULookup(b *testing.B) {
	d := gputest.Device(b)
	for _, order := range []int{64, 32, 128, 256} {
		g := newBenchTree(b, d, order)
		q := benchQueries
		b.Run(fmt.Sprintf("order=%d/call", order), func(b *testing.B) {
			vals, found := make([]uint64, len(q)), make([]bool, len(q))
			for b.Loop() {
				if err := g.Lookup(q, vals, found); err != nil {
					b.Fatal(err)
				}
			}
			reportPhases(b, len(q), g.LastBatch())
		})
		b.Run(fmt.Sprintf("order=%d/staged", order), func(b *testing.B) { benchLookupStaged(b, g, q) })
		b.Run(fmt.Sprintf("order=%d/kernel", order), func(b *testing.B) {
			gt := g.e.(*gpuTree)
			gt.mu.Lock()
			defer gt.mu.Unlock()
			keys, _ := gpu.Get[uint64](gt.pool, bufInK, len(q))
			out, _ := gpu.Get[uint64](gt.pool, bufOutV, len(q))
			f, err := gpu.Get[uint8](gt.pool, bufFlags, len(q))
			if err != nil {
				b.Fatal(err)
			}
			if err := keys.Write(gt.s, 0, q); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := gt.launchGet(gt.st.root, keys, len(q), out, f); err != nil {
					b.Fatal(err)
				}
				if err := gt.s.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*float64(len(q))/b.Elapsed().Seconds()/1e6, "Mkeys/s")
		})
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGPURanges answers 1M range queries of about 16 keys on the
// 100M-key tree with each form of range kernels (rangeForm): kernel=start
// (bt_range_start and bt_range_copy, the default), kernel=thread
// (bt_range) and kernel=warp (bt_range_warp), then the default into a
// Result, ascending (into) and descending (into-desc); besides the whole call it
// reports the device's work phase (count, scan, write) as Mqueries/s-work.
func BenchmarkGPURanges(b *testing.B) {
	g := newBenchTree(b, gputest.Device(b), DefaultOrder)
	nq := 1_000_000
	los, his := make([]uint64, nq), make([]uint64, nq)
	width := 15 * (^uint64(0) / benchTreeKeys)
	for i := range los {
		los[i] = benchTree[0][prim.SplitMix64(9, uint64(i))%benchTreeKeys]
		his[i] = los[i] + width
		if his[i] < los[i] {
			his[i] = ^uint64(0)
		}
	}
	for _, form := range []rangeForm{rangeOneDescent, rangeThread, rangeWarp} {
		name := map[rangeForm]string{rangeOneDescent: "kernel=start", rangeThread: "kernel=thread", rangeWarp: "kernel=warp"}[form]
		b.Run(name, func(b *testing.B) {
			g.e.(*gpuTree).rangeForm = form
			defer func() { g.e.(*gpuTree).rangeForm = rangeOneDescent }()
			pairs := 0
			var work time.Duration
			for b.Loop() {
				k, _, _, err := g.Ranges(los, his, 0)
				if err != nil {
					b.Fatal(err)
				}
				pairs = len(k)
				work += g.LastBatch().Work
			}
			b.ReportMetric(float64(b.N)*float64(nq)/b.Elapsed().Seconds()/1e6, "Mqueries/s")
			b.ReportMetric(float64(b.N)*float64(nq)/work.Seconds()/1e6, "Mqueries/s-work")
			b.ReportMetric(float64(pairs)/float64(nq), "pairs/query")
		})
	}
	// The default kernels answering into a reused Result: Go memory
	// (copied out of the transfer buffers), then pinned (NewResult: the
	// device writes into it by DMA); the pinned one also in one chunk
	// and in chunks of 32Ki, 256Ki and 512Ki queries (the default:
	// 128Ki); both default ones also descending (into-desc:
	// RangesDescInto, the same queries, largest key first). The last
	// call's steps are logged.
	gt := g.e.(*gpuTree)
	for _, c := range []struct {
		pinned bool
		chunk  int
		desc   bool
	}{{false, 0, false}, {true, 0, false}, {false, 0, true}, {true, 0, true},
		{true, nq, false}, {true, 1 << 15, false}, {true, 1 << 18, false}, {true, 1 << 19, false}} {
		name, into := "into", g.RangesInto
		if c.desc {
			name, into = "into-desc", g.RangesDescInto
		}
		name = fmt.Sprintf("kernel=start/%s/pinned=%v", name, c.pinned)
		if c.chunk > 0 {
			name += fmt.Sprintf("/chunk=%d", c.chunk)
		}
		pinned := c.pinned
		b.Run(name, func(b *testing.B) {
			gt.rangeChunkSize = c.chunk
			gt.trace = &engine.StepTrace{}
			defer func() {
				if err := gt.trace.Close(); err != nil {
					b.Error(err)
				}
				gt.rangeChunkSize, gt.trace = 0, nil
			}()
			r := &Result{}
			if pinned {
				r = g.NewResult()
			}
			defer r.Free()
			if _, err := into(r, los, his, 0); err != nil { // sized (pinned) before the timing
				b.Fatal(err)
			}
			var work, total time.Duration
			for b.Loop() {
				if _, err := into(r, los, his, 0); err != nil {
					b.Fatal(err)
				}
				tm := g.LastBatch()
				work, total = work+tm.Work, total+tm.Total
			}
			b.ReportMetric(float64(b.N)*float64(nq)/b.Elapsed().Seconds()/1e6, "Mqueries/s")
			b.ReportMetric(float64(b.N)*float64(nq)/work.Seconds()/1e6, "Mqueries/s-work")
			b.ReportMetric(total.Seconds()*1e3/float64(b.N), "call-ms")
			b.ReportMetric(float64(len(r.Keys))/float64(nq), "pairs/query")
			steps, err := gt.trace.Steps()
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("last call (%.3f ms):\n%s", ms(g.LastBatch().Total), engine.FormatSteps(steps))
		})
	}
}

// BenchmarkCPUEngineLarge builds the 100M-key tree on the CPU engine (all
// cores) and looks up the 10M keys in it: the CPU figures beside the GPU
// benchmarks'.
func BenchmarkCPUEngineLarge(b *testing.B) {
	benchInputs()
	c, err := Open(Options{Device: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if err := c.Build(benchTree[0], benchTree[1]); err != nil {
				b.Fatal(err)
			}
		}
		reportPhases(b, benchTreeKeys, c.LastBatch())
	})
	b.Run("lookup", func(b *testing.B) {
		if c.Len() == 0 {
			if err := c.Build(benchTree[0], benchTree[1]); err != nil {
				b.Fatal(err)
			}
		}
		vals, found := make([]uint64, len(benchQueries)), make([]bool, len(benchQueries))
		for b.Loop() {
			if err := c.Lookup(benchQueries, vals, found); err != nil {
				b.Fatal(err)
			}
		}
		reportPhases(b, len(benchQueries), c.LastBatch())
	})
}

// benchLookupStaged times LookupStaged of q from pinned staging on g and
// reports its phases.
func benchLookupStaged(b *testing.B, g *Tree, q []uint64) {
	st, err := g.NewStaging(len(q))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Free()
	copy(st.Keys, q)
	for b.Loop() {
		if err := g.LookupStaged(st, len(q)); err != nil {
			b.Fatal(err)
		}
	}
	reportPhases(b, len(q), g.LastBatch())
}

// ms is d in milliseconds.
func ms[D ~int64](d D) float64 { return float64(d) / 1e6 }
