package hashindex

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestSearchSharedDuringUpdates runs SearchShared on several goroutines
// while another inserts and deletes other keys around 80% load (cuckoo
// displacement moves the searched keys' cells): a key stays found at its
// location unless an insert dropped it, and -race sees no unsynchronized
// access to the table. On the GPU engine SearchShared is Search.
func TestSearchSharedDuringUpdates(t *testing.T) {
	for _, e := range testEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ks := newKeySet(newRand(t))
			ix := newIndex(t, e, Options{Buckets: 1 << 10})
			if got, want := ix.Shared(), e.name == "cpu"; got != want {
				t.Fatalf("Shared() = %v on %s", got, e.name)
			}
			resident := ks.hashes(ix.Capacity()/2, nil)
			locs := seq(1, len(resident))
			locOf := map[uint32]int{}
			for i, l := range locs {
				locOf[l] = i
			}
			if d := mustInsert(t, ix, resident, locs); len(d) != 0 {
				t.Fatalf("%d drops at half load", len(d))
			}
			churn := ks.hashes(ix.Capacity()*3/10, nil)
			churnLocs := seq(uint32(len(resident)+1), len(churn))
			var droppedKeys sync.Map // resident index -> true
			var stop atomic.Bool
			var searches atomic.Uint64
			var wg sync.WaitGroup
			wg.Go(func() {
				defer stop.Store(true)
				found := make([]bool, len(churn)/2)
				for round := 0; round < 40 || searches.Load() < 20000; round++ {
					lo := (round * 97) % (len(churn) / 2)
					h, l := churn[lo:lo+len(churn)/2], churnLocs[lo:lo+len(churn)/2]
					d, err := ix.Insert(h, l, nil)
					if err != nil {
						t.Error(err)
						return
					}
					for _, x := range d {
						if i, ok := locOf[x.Loc]; ok {
							droppedKeys.Store(i, true)
						}
					}
					if err := ix.Delete(h, l, found); err != nil {
						t.Error(err)
						return
					}
				}
			})
			misses := make([][]int, 4)
			for g := range misses {
				wg.Go(func() {
					out := make([]uint32, 64)
					for k := g * 64; !stop.Load(); k = (k + 64) % (len(resident) - 64) {
						if err := ix.SearchShared(resident[k:k+64], out); err != nil {
							t.Error(err)
							return
						}
						searches.Add(64)
						for j, l := range out {
							switch {
							case l == NotFound:
								misses[g] = append(misses[g], k+j)
							case l != locs[k+j]:
								t.Errorf("key %d found at %d, inserted at %d", k+j, l, locs[k+j])
								return
							}
						}
					}
				})
			}
			wg.Wait()
			for _, m := range misses {
				for _, i := range m {
					if _, ok := droppedKeys.Load(i); !ok {
						t.Fatalf("key %d missed by a concurrent search but never dropped", i)
					}
				}
			}
			st := ix.Stats()
			if e.name == "cpu" && st.Shared != searches.Load() {
				t.Errorf("Stats().Shared = %d, searched %d", st.Shared, searches.Load())
			}
			t.Logf("%d shared searches during the update rounds, %d displaced", searches.Load(), st.Displaced)
		})
	}
}
