package hashindex

import (
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

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
			ix, err := Open(e.opts(Options{Buckets: 1 << 12}))
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
			if st.Pinned() != (ix.Backend() == gpu.BackendGPU) {
				t.Errorf("pinned %v on the %s engine", st.Pinned(), ix.Backend())
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
