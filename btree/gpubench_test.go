package btree

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"warpkv/gpu"
	"warpkv/internal/par"

	tbtree "github.com/tidwall/btree"

	"warpkv/internal/gputest"
	"warpkv/prim"
)

// parallelKeys is benchKeys on all cores.
func parallelKeys(n int, seed uint64) ([]uint64, []uint64) {
	k, v := make([]uint64, n), make([]uint64, n)
	par.For(n, 1<<16, 16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k[i], v[i] = prim.SplitMix64(seed, uint64(i)), uint64(i)
		}
	})
	return k, v
}

// rate formats n items over d as millions per second.
func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

// TestGPUBenchFigures prints the build and lookup figures of the GPU
// engine, the CPU engine and tidwall/btree (one goroutine). It runs only
// with WARPKV_BTREE_BENCH=1 and a GPU.
func TestGPUBenchFigures(t *testing.T) {
	if os.Getenv("WARPKV_BTREE_BENCH") != "1" {
		t.Skip("set WARPKV_BTREE_BENCH=1")
	}
	d := gputest.Device(t)
	t.Logf("device %s", d)
	k100, v100 := parallelKeys(100_000_000, 1)
	q10, _ := parallelKeys(10_000_000, 1) // present keys, in random order
	for i := range q10 {
		if i%2 == 1 {
			q10[i] = prim.SplitMix64(7, uint64(i)) // misses
		}
	}
	for _, order := range []int{64, 32, 128, 256} {
		g, err := New(Options{Order: order, GPU: d})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Build(k100[:1000], v100[:1000]); err != nil { // compile and warm up
			t.Fatal(err)
		}
		sizes := []int{10_000_000, 100_000_000}
		if order != DefaultOrder {
			sizes = sizes[1:]
		}
		for _, n := range sizes {
			var best [4]time.Duration
			for rep := range 2 {
				gt := g.g
				t0 := time.Now()
				if err := g.Build(k100[:n], v100[:n]); err != nil {
					t.Fatal(err)
				}
				total := time.Since(t0)
				// The phases, separately (keys uploaded again).
				gt.mu.Lock()
				t1 := time.Now()
				ik, _ := gpu.Get[uint64](gt.pool, bufInK, n)
				iv, _ := gpu.Get[uint64](gt.pool, bufInV, n)
				if err := ik.Write(gt.s, 0, k100[:n]); err != nil {
					t.Fatal(err)
				}
				if err := iv.Write(gt.s, 0, v100[:n]); err != nil {
					t.Fatal(err)
				}
				_ = gt.s.Synchronize()
				t2 := time.Now()
				if err := gt.sortUploaded(n); err != nil {
					t.Fatal(err)
				}
				_ = gt.s.Synchronize()
				t3 := time.Now()
				if _, err := gt.buildSorted(n); err != nil {
					t.Fatal(err)
				}
				t4 := time.Now()
				gt.mu.Unlock()
				ph := [4]time.Duration{total, t2.Sub(t1), t3.Sub(t2), t4.Sub(t3)}
				if rep == 0 || ph[0] < best[0] {
					best = ph
				}
			}
			t.Logf("GPU order %d build %d: host-level %v (%.0f Mkeys/s); upload %v, sort %v, dedup+distribute %v; on device (sort+build) %.0f Mkeys/s",
				order, n, best[0], rate(n, best[0]), best[1], best[2], best[3], rate(n, best[2]+best[3]))
		}
		if err := g.Check(); err != nil && order == DefaultOrder {
			t.Fatal(err)
		}
		// Lookups of 10M keys (half hits) on the 100M tree.
		gt := g.g
		var kern, host time.Duration
		vals, found := make([]uint64, len(q10)), make([]bool, len(q10))
		for rep := range 3 {
			t0 := time.Now()
			if err := g.Lookup(q10, vals, found); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(t0); rep == 0 || d < host {
				host = d
			}
			gt.mu.Lock()
			q, _ := gpu.Get[uint64](gt.pool, bufInK, len(q10))
			out, _ := gpu.Get[uint64](gt.pool, bufOutV, len(q10))
			f, _ := gpu.Get[uint8](gt.pool, bufFlags, len(q10))
			_ = q.Write(gt.s, 0, q10)
			_ = gt.s.Synchronize()
			t1 := time.Now()
			if err := gt.launchGet(g.root, q, len(q10), out, f); err != nil {
				t.Fatal(err)
			}
			_ = gt.s.Synchronize()
			if d := time.Since(t1); rep == 0 || d < kern {
				kern = d
			}
			gt.mu.Unlock()
		}
		hits := 0
		for _, f := range found {
			if f {
				hits++
			}
		}
		t.Logf("GPU order %d get 10M on 100M (height %d, %d hits): kernel %v (%.0f Mkeys/s), host-level %v (%.0f Mkeys/s)",
			order, gt.height, hits, kern, rate(len(q10), kern), host, rate(len(q10), host))
		if order == DefaultOrder {
			benchUpdates(t, g, "GPU")
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// CPU engine, all cores.
	c, _ := New(Options{Device: "cpu"})
	for _, n := range []int{10_000_000, 100_000_000} {
		t0 := time.Now()
		if err := c.Build(k100[:n], v100[:n]); err != nil {
			t.Fatal(err)
		}
		dt := time.Since(t0)
		t.Logf("CPU engine (%d workers) build %d: %v (%.1f Mkeys/s)", c.opt.workers, n, dt, rate(n, dt))
	}
	vals, found := make([]uint64, len(q10)), make([]bool, len(q10))
	t0 := time.Now()
	_ = c.Lookup(q10, vals, found)
	dt := time.Since(t0)
	t.Logf("CPU engine get 10M on 100M: %v (%.1f Mkeys/s)", dt, rate(len(q10), dt))
	benchUpdates(t, c, "CPU engine")
	_ = c.Close()

	// tidwall/btree on one goroutine: sort + Load (its best build), and
	// lookups, on 10M keys.
	n := 10_000_000
	t0 = time.Now()
	sk := slices.Clone(k100[:n])
	slices.Sort(sk)
	var m tbtree.Map[uint64, uint64]
	for i, key := range sk {
		m.Load(key, uint64(i))
	}
	dt = time.Since(t0)
	t.Logf("tidwall/btree 1 goroutine build 10M (sort + Load): %v (%.2f Mkeys/s)", dt, rate(n, dt))
	nq := 2_000_000
	t0 = time.Now()
	h := 0
	for _, key := range q10[:nq] {
		if _, ok := m.Get(key); ok {
			h++
		}
	}
	dt = time.Since(t0)
	t.Logf("tidwall/btree 1 goroutine get 2M on 10M: %v (%.2f Mkeys/s, %d hits)", dt, rate(nq, dt), h)
}

// benchUpdates inserts 10M new random keys into the tree (100M keys) and
// deletes them again, twice, logging each batch's LastBatch breakdown:
// the rate with transfers (Total) and without (Sort + Work).
func benchUpdates(t *testing.T, tr *Tree, name string) {
	t.Helper()
	k, v := parallelKeys(10_000_000, 2)
	for rep := range 2 {
		for _, op := range []string{"insert", "delete"} {
			var err error
			if op == "insert" {
				err = tr.Insert(k, v)
			} else {
				err = tr.Delete(k)
			}
			if err != nil {
				t.Fatal(err)
			}
			b := tr.LastBatch()
			dev := b.Sort + b.Work
			t.Logf("%s order %d %s 10M, %dM keys after (rep %d): total %v (%.2f Gkeys/s); upload %v, sort+dedupe %v, work %v, download %v; without transfers %.2f Gkeys/s",
				name, tr.Order(), op, (tr.Len()+5e5)/1e6, rep, b.Total, rate(b.Keys, b.Total)/1e3, b.Upload, b.Sort, b.Work,
				b.Download, rate(b.Keys, dev)/1e3)
		}
	}
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestGPUPerf prints the GPU engine's figures on the suite's largest
// cases: build 100M, insert 10M into 100M (and delete them), lookup 10M
// (half absent) on 100M, whole call and kernel alone, and 1M range
// queries of about 16 keys, with the LastBatch phases. It runs only with
// WARPKV_BTREE_PERF=1 and a GPU.
func TestGPUPerf(t *testing.T) {
	if os.Getenv("WARPKV_BTREE_PERF") != "1" {
		t.Skip("set WARPKV_BTREE_PERF=1")
	}
	d := gputest.Device(t)
	const n = 100_000_000
	k100, v100 := parallelKeys(n, 1)
	q10, _ := parallelKeys(10_000_000, 1)
	for i := range q10 {
		if i%2 == 1 {
			q10[i] = prim.SplitMix64(7, uint64(i))
		}
	}
	g, err := New(Options{GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	best := func(reps int, f func() error) (time.Duration, BatchTimes) {
		var b time.Duration
		var bt BatchTimes
		for rep := range reps {
			t0 := time.Now()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			if dt := time.Since(t0); rep == 0 || dt < b {
				b, bt = dt, g.LastBatch()
			}
		}
		return b, bt
	}
	phases := func(bt BatchTimes) string {
		return fmt.Sprintf("upload %v sort %v work %v download %v", bt.Upload, bt.Sort, bt.Work, bt.Download)
	}
	dt, bt := best(3, func() error { return g.Build(k100, v100) })
	t.Logf("build 100M: %v (%.0f Mkeys/s); %s", dt, rate(n, dt), phases(bt))
	ik, iv := parallelKeys(10_000_000, 2)
	for rep := range 3 {
		t0 := time.Now()
		if err := g.Insert(ik, iv); err != nil {
			t.Fatal(err)
		}
		dt := time.Since(t0)
		bt := g.LastBatch()
		t.Logf("insert 10M into 100M (rep %d): %v (%.0f Mkeys/s); %s", rep, dt, rate(len(ik), dt), phases(bt))
		t0 = time.Now()
		if err := g.Delete(ik); err != nil {
			t.Fatal(err)
		}
		dt = time.Since(t0)
		bt = g.LastBatch()
		t.Logf("delete 10M from 110M (rep %d): %v (%.0f Mkeys/s); %s", rep, dt, rate(len(ik), dt), phases(bt))
	}
	vals, found := make([]uint64, len(q10)), make([]bool, len(q10))
	dt, bt = best(5, func() error { return g.Lookup(q10, vals, found) })
	hits := 0
	for _, f := range found {
		if f {
			hits++
		}
	}
	gt := g.g
	gt.mu.Lock()
	q, _ := gpu.Get[uint64](gt.pool, bufInK, len(q10))
	out, _ := gpu.Get[uint64](gt.pool, bufOutV, len(q10))
	f, _ := gpu.Get[uint8](gt.pool, bufFlags, len(q10))
	_ = q.Write(gt.s, 0, q10)
	_ = gt.s.Synchronize()
	var kern time.Duration
	for rep := range 5 {
		t1 := time.Now()
		if err := gt.launchGet(g.root, q, len(q10), out, f); err != nil {
			t.Fatal(err)
		}
		_ = gt.s.Synchronize()
		if d := time.Since(t1); rep == 0 || d < kern {
			kern = d
		}
	}
	gt.mu.Unlock()
	t.Logf("lookup 10M on 100M (%d hits): whole call %v (%.0f Mkeys/s; %s), kernel %v (%.0f Mkeys/s)",
		hits, dt, rate(len(q10), dt), phases(bt), kern, rate(len(q10), kern))
	nq := 1_000_000
	los, his := make([]uint64, nq), make([]uint64, nq)
	width := 15 * (^uint64(0) / n)
	for i := range los {
		los[i] = k100[prim.SplitMix64(9, uint64(i))%n]
		his[i] = los[i] + width
		if his[i] < los[i] {
			his[i] = ^uint64(0)
		}
	}
	var pairs int
	dt, _ = best(3, func() error {
		k, _, _, err := g.Ranges(los, his, 0)
		pairs = len(k)
		return err
	})
	t.Logf("ranges 1M on 100M (%d pairs): %v (%.2f M queries/s)", pairs, dt, rate(nq, dt))
}
