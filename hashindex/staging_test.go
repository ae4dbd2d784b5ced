package hashindex

import (
	"fmt"
	"slices"
	"testing"
)

// poison is written to a Staging's outputs before each call, so that an
// output the call did not write shows.
const poison = 0xDEADBEEF

// stage writes the op's jobs into st.
func (o op) stage(t testing.TB, st *Staging) {
	t.Helper()
	n := len(o.hashes)
	if n > st.Cap() {
		t.Fatalf("test bug: %d jobs in a staging of %d", n, st.Cap())
	}
	copy(st.Hashes(), o.hashes)
	copy(st.Locs(), o.locs)
	for i := range st.Out()[:n] {
		st.Out()[i] = poison
	}
}

// runStaged applies one op through the staged calls on st and returns its
// outputs as run does. With withFound false, DeleteStaged gets no found
// slice and the flags come from st.Out().
func (o op) runStaged(t testing.TB, ix *Index, st *Staging, withFound bool) (dropped []Dropped, found []bool, locs []uint32) {
	t.Helper()
	n := len(o.hashes)
	o.stage(t, st)
	switch o.kind {
	case "insert":
		d, err := ix.InsertStaged(st, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		dropped = d
	case "delete":
		found = make([]bool, n)
		var arg []bool
		if withFound {
			arg = found
		}
		if err := ix.DeleteStaged(st, n, arg); err != nil {
			t.Fatal(err)
		}
		for i, f := range st.Out()[:n] {
			if f > 1 || (withFound && (f == 1) != found[i]) {
				t.Fatalf("delete job %d: flag %#x in Out, found %v", i, f, found[i])
			}
			found[i] = f == 1
		}
	default:
		if err := ix.SearchStaged(st, n); err != nil {
			t.Fatal(err)
		}
		locs = slices.Clone(st.Out()[:n])
	}
	if !slices.Equal(st.Hashes()[:n], o.hashes) || (o.kind != "search" && !slices.Equal(st.Locs()[:n], o.locs)) {
		t.Fatalf("%s staged changed the staging's inputs", o.kind)
	}
	return dropped, found, locs
}

// stagedMode is how a test index is driven.
type stagedMode int

const (
	viaSlices stagedMode = iota // Search, Insert, Delete
	viaStaged                   // SearchStaged, InsertStaged, DeleteStaged with found
	viaMixed                    // alternately slices and staged calls, DeleteStaged without found
)

func (m stagedMode) String() string { return [...]string{"slices", "staged", "mixed"}[m] }

// TestStagedAgree runs one random script of inserts, deletes and searches
// of sizes 0, 1, small and larger than the chunks of the GPU variants
// through the slice calls on the CPU engine with one goroutine (the
// reference) and, on every engine (CPU with several goroutines, GPU, GPU
// with small chunks), through the slice calls, the staged calls and both
// alternately; it checks that every output, the stats and the tables, word
// for word, equal the reference after every call.
func TestStagedAgree(t *testing.T) {
	configs := []struct {
		name string
		opts Options
		pool int // keys in play; 0: 1.25 times the capacity, to reach full load
	}{
		{"default", Options{Buckets: 1 << 13}, 0},
		{"many partitions", Options{Buckets: 1 << 16, PartitionBits: 1}, 1 << 15},
	}
	sizes := []int{0, 1, 33, 1000, 5000, 1 << 14}
	steps := 40
	if testing.Short() {
		steps = 20
	}
	cpu := func(w int) testEngine {
		return testEngine{name: fmt.Sprintf("cpu(%d workers)", w), opts: func(o Options) Options {
			o.Device, o.Workers = "cpu", w
			return o
		}}
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			r := newRand(t)
			capacity := max(c.opts.Buckets, 2) * CellsPerBucket
			if c.pool == 0 {
				c.pool = capacity + capacity/4
			}
			pool := newKeySet(r).hashes(c.pool, nil)
			ref := newIndex(t, cpu(1), c.opts)
			engines := append([]testEngine{cpu(7)}, testEngines(t)[1:]...)
			engines = append(engines, gpuVariants(t)...)
			type driven struct {
				name string
				mode stagedMode
				ix   *Index
				st   *Staging
			}
			var ixs []driven
			for _, e := range engines {
				for _, m := range []stagedMode{viaSlices, viaStaged, viaMixed} {
					ix := newIndex(t, e, c.opts)
					st, err := ix.NewStaging(slices.Max(sizes))
					if err != nil {
						t.Fatal(err)
					}
					ixs = append(ixs, driven{e.name + ", " + m.String(), m, ix, st})
				}
			}
			for step, o := range script(r, pool, steps, sizes) {
				d0, f0, l0 := o.run(t, ref)
				t0 := mustSnapshot(t, ref)
				for _, x := range ixs {
					var d []Dropped
					var f []bool
					var l []uint32
					switch {
					case x.mode == viaSlices || (x.mode == viaMixed && step%2 == 0):
						d, f, l = o.run(t, x.ix)
					default:
						d, f, l = o.runStaged(t, x.ix, x.st, x.mode == viaStaged)
					}
					if !slices.Equal(d, d0) || !slices.Equal(f, f0) || !slices.Equal(l, l0) {
						t.Fatalf("step %d (%s of %d): %s outputs differ from the reference", step, o.kind, len(o.hashes), x.name)
					}
					if tab := mustSnapshot(t, x.ix); !slices.Equal(tab, t0) {
						i := 0
						for tab[i] == t0[i] {
							i++
						}
						t.Fatalf("step %d (%s of %d): %s table differs from the reference first at word %d: %#x vs %#x",
							step, o.kind, len(o.hashes), x.name, i, tab[i], t0[i])
					}
					if st, st0 := x.ix.Stats(), ref.Stats(); st != st0 {
						t.Fatalf("step %d (%s of %d): %s stats %+v, reference %+v", step, o.kind, len(o.hashes), x.name, st, st0)
					}
				}
			}
			st := ref.Stats()
			t.Logf("final load %.3f, stats %+v", float64(st.Entries)/float64(capacity), st)
		})
	}
}

// TestStagedLarge runs a batch larger than the default chunks of both
// call kinds (pipeChunk, stagedChunk) through insert, search and delete,
// staged and as slices, on every engine, against the slice calls of the
// CPU engine.
func TestStagedLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large batches skipped under -short")
	}
	n := max(pipeChunk, stagedChunk) + 5
	opts := Options{Buckets: 1 << 20} // 8 Mi cells: load about one half
	r := newRand(t)
	keys := newKeySet(r).hashes(n-n/8, nil)
	hashes := append(slices.Clone(keys), keys[:n/8]...) // an eighth of the keys twice: overwrites
	r.Shuffle(n, func(i, j int) { hashes[i], hashes[j] = hashes[j], hashes[i] })
	ops := []op{
		{kind: "insert", hashes: hashes, locs: seq(1, n)},
		{kind: "search", hashes: append(slices.Clone(keys[:n/2]), newKeySet(r).hashes(n-n/2, nil)...)},
		{kind: "delete", hashes: hashes, locs: seq(1, n)}, // overwritten locations miss
		{kind: "search", hashes: keys},
	}
	ref := newIndex(t, testEngines(t)[0], opts)
	type result struct {
		d []Dropped
		f []bool
		l []uint32
	}
	var want []result
	for _, o := range ops {
		d, f, l := o.run(t, ref)
		want = append(want, result{d, f, l})
	}
	t0 := mustSnapshot(t, ref)
	for _, e := range testEngines(t) {
		for _, m := range []stagedMode{viaSlices, viaStaged, viaMixed} {
			t.Run(e.name+", "+m.String(), func(t *testing.T) {
				ix := newIndex(t, e, opts)
				st, err := ix.NewStaging(n)
				if err != nil {
					t.Fatal(err)
				}
				for i, o := range ops {
					var d []Dropped
					var f []bool
					var l []uint32
					if m == viaSlices || (m == viaMixed && i%2 == 0) {
						d, f, l = o.run(t, ix)
					} else {
						d, f, l = o.runStaged(t, ix, st, m == viaStaged)
					}
					if !slices.Equal(d, want[i].d) || !slices.Equal(f, want[i].f) || !slices.Equal(l, want[i].l) {
						t.Fatalf("op %d (%s of %d): outputs differ from the cpu engine's slice calls", i, o.kind, n)
					}
				}
				if !slices.Equal(mustSnapshot(t, ix), t0) {
					t.Fatal("table differs from the cpu engine's")
				}
				if st, st0 := ix.Stats(), ref.Stats(); st != st0 {
					t.Fatalf("stats %+v, cpu engine %+v", st, st0)
				}
				if err := st.Free(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestStagingErrors checks the staged calls' argument validation, that a
// rejected insert leaves the table and stats untouched, and the life cycle
// of a Staging (Free, the index's Close, device memory given back).
func TestStagingErrors(t *testing.T) {
	for _, e := range append(testEngines(t), gpuVariants(t)...) {
		t.Run(e.name, func(t *testing.T) {
			var live func() (int, int64)
			if o := e.opts(Options{}); o.GPU != nil {
				live = o.GPU.Live
			}
			var allocs int
			var bytes int64
			if live != nil {
				allocs, bytes = live()
			}
			ix, err := New(e.opts(Options{Buckets: 1 << 12}))
			if err != nil {
				t.Fatal(err)
			}
			if e.tune != nil {
				e.tune(ix)
			}
			defer ix.Close()
			for _, c := range []int{-1, MaxBatch + 1} {
				if _, err := ix.NewStaging(c); err == nil {
					t.Errorf("NewStaging(%d) succeeded", c)
				}
			}
			const n = 5000
			st, err := ix.NewStaging(n)
			if err != nil {
				t.Fatal(err)
			}
			if st.Cap() != n || len(st.Hashes()) != n || len(st.Locs()) != n || len(st.Out()) != n {
				t.Fatalf("staging of %d: cap %d, %d hashes, %d locs, %d outputs", n, st.Cap(), len(st.Hashes()), len(st.Locs()), len(st.Out()))
			}
			if st.Pinned() != (ix.Engine() == "gpu") {
				t.Errorf("pinned %v on the %s engine", st.Pinned(), ix.Engine())
			}
			empty, err := ix.NewStaging(0)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.SearchStaged(empty, 0); err != nil {
				t.Errorf("search of 0 jobs in an empty staging: %v", err)
			}
			other := newIndex(t, e, Options{Buckets: 16})
			foreign, err := other.NewStaging(4)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name string
				st   *Staging
				n    int
			}{{"more jobs than capacity", st, n + 1}, {"negative count", st, -1}, {"nil staging", nil, 0}, {"staging of another index", foreign, 1}} {
				if err := ix.SearchStaged(c.st, c.n); err == nil {
					t.Errorf("search: %s: accepted", c.name)
				}
				if _, err := ix.InsertStaged(c.st, c.n, nil); err == nil {
					t.Errorf("insert: %s: accepted", c.name)
				}
				if err := ix.DeleteStaged(c.st, c.n, nil); err == nil {
					t.Errorf("delete: %s: accepted", c.name)
				}
			}
			if err := ix.DeleteStaged(st, 2, make([]bool, 1)); err == nil {
				t.Error("delete with a short found slice accepted")
			}

			// A location NotFound anywhere in the batch (in the last chunk
			// on the variants) rejects it with the table unchanged.
			keys := newKeySet(newRand(t)).hashes(2*n, nil)
			if _, err := ix.Insert(keys[n:], seq(1, n), nil); err != nil {
				t.Fatal(err)
			}
			tab, stats := mustSnapshot(t, ix), ix.Stats()
			copy(st.Hashes(), keys[:n])
			copy(st.Locs(), seq(n+1, n))
			for _, bad := range []int{0, n - 1} {
				st.Locs()[bad] = NotFound
				if _, err := ix.InsertStaged(st, n, nil); err == nil {
					t.Errorf("insert with location NotFound at job %d accepted", bad)
				}
				if !slices.Equal(mustSnapshot(t, ix), tab) || ix.Stats() != stats {
					t.Fatalf("rejected insert (NotFound at job %d) changed the table or stats", bad)
				}
				st.Locs()[bad] = uint32(n + 1 + bad)
			}
			if _, err := ix.InsertStaged(st, n, nil); err != nil {
				t.Fatalf("valid insert after a rejected one: %v", err)
			}
			if st := ix.Stats(); st.Inserts != stats.Inserts+n {
				t.Fatalf("stats %+v after a valid insert of %d", st, n)
			}

			if err := st.Free(); err != nil {
				t.Fatal(err)
			}
			if err := st.Free(); err != nil {
				t.Errorf("second free: %v", err)
			}
			if st.Hashes() != nil || st.Out() != nil {
				t.Error("slices still handed out after Free")
			}
			if err := ix.SearchStaged(st, 1); err == nil {
				t.Error("search on a freed staging accepted")
			}
			kept, err := ix.NewStaging(100) // freed by Close
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			if err := ix.SearchStaged(kept, 1); err == nil {
				t.Error("search after close accepted")
			}
			if _, err := ix.NewStaging(1); err == nil {
				t.Error("NewStaging after close accepted")
			}
			if err := kept.Free(); err != nil {
				t.Errorf("free after close: %v", err)
			}
			if err := other.Close(); err != nil {
				t.Fatal(err)
			}
			if live != nil {
				if a, b := live(); a != allocs || b != bytes {
					t.Fatalf("device and pinned allocations %d (%d bytes) after close, %d (%d bytes) before", a, b, allocs, bytes)
				}
			}
		})
	}
}
