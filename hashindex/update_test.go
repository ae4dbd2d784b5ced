package hashindex

import (
	"fmt"
	"slices"
	"testing"
)

// TestUpdateStaged runs random update rounds through UpdateStaged on every
// engine and through Delete then Insert on the CPU engine with one
// goroutine (the reference): the drops, the stats and the table, word for
// word, must be equal after every round, and every table keeps the
// index's invariants. The rounds cover deletes only, inserts only, both,
// keys deleted and inserted again in one round, keys inserted twice in one
// round (overwrites), deletes that miss, a nearly full table (displacement
// drops), fewer partitions than the kernel has units and more, and rounds
// of at most SmallUpdateMax jobs (one kernel on the GPU) and above (a
// delete and an insert call, chunked on the variants).
func TestUpdateStaged(t *testing.T) {
	shapes := []struct {
		name   string
		opts   Options
		rounds [][2]int // deletes and inserts of each round
	}{
		{"tiny partitions, displacement", Options{Buckets: 64, PartitionBits: 2},
			[][2]int{{0, 300}, {0, 400}, {50, 0}, {120, 200}, {7, 9}, {300, 600}}},
		{"many partitions", Options{Buckets: 1 << 16, PartitionBits: 4},
			[][2]int{{0, 1}, {1, 0}, {0, 2000}, {100, 100}, {1000, SmallUpdateMax - 1000}, {1200, 1500}, {3, 4}, {SmallUpdateMax, 1}}},
		{"1024 partitions", Options{Buckets: 1 << 12, PartitionBits: 2},
			[][2]int{{0, 1500}, {40, 60}, {300, 500}, {1000, 1000}, {5, 0}}},
		{"default partitions", Options{Buckets: 1 << 12},
			[][2]int{{0, 5000}, {10, 20}, {200, 250}, {2000, 1000}, {1, 1}}},
	}
	for _, sh := range shapes {
		for _, e := range append(testEngines(t), gpuVariants(t)...) {
			t.Run(fmt.Sprintf("%s/%s", sh.name, e.name), func(t *testing.T) {
				r := newRand(t)
				ref := newIndex(t, testEngines(t)[0], Options{Buckets: sh.opts.Buckets, PartitionBits: sh.opts.PartitionBits, Workers: 1})
				ix := newIndex(t, e, sh.opts)
				most := 0
				for _, rd := range sh.rounds {
					most = max(most, rd[0]+rd[1])
				}
				st, err := ix.NewStaging(most)
				if err != nil {
					t.Fatal(err)
				}
				keys := newKeySet(r)
				var liveH []uint64 // (hash, location) pairs inserted, some since deleted or dropped
				var liveL []uint32
				nextLoc := uint32(1)
				for k, rd := range sh.rounds {
					dels, ins := rd[0], rd[1]
					hs := make([]uint64, 0, dels+ins)
					ls := make([]uint32, 0, dels+ins)
					for range dels {
						if len(liveH) > 0 && r.IntN(8) != 0 {
							i := r.IntN(len(liveH))
							hs, ls = append(hs, liveH[i]), append(ls, liveL[i])
						} else { // a delete that misses
							hs, ls = append(hs, keys.next(nil)), append(ls, nextLoc)
							nextLoc++
						}
					}
					for j := range ins {
						var h uint64
						switch {
						case j > 0 && r.IntN(10) == 0: // a key of this round again
							h = hs[dels+r.IntN(j)]
						case len(liveH) > 0 && r.IntN(4) == 0: // a key inserted before (maybe deleted above)
							h = liveH[r.IntN(len(liveH))]
						default:
							h = keys.next(nil)
						}
						hs, ls = append(hs, h), append(ls, nextLoc)
						liveH, liveL = append(liveH, h), append(liveL, nextLoc)
						nextLoc++
					}
					mustDelete(t, ref, hs[:dels], ls[:dels]) // the found flags show in the stats
					wantDrops := mustInsert(t, ref, hs[dels:], ls[dels:])
					copy(st.Hashes(), hs)
					copy(st.Locs(), ls)
					got, err := ix.UpdateStaged(st, dels, ins, nil)
					if err != nil {
						t.Fatalf("round %d (%d deletes, %d inserts): %v", k, dels, ins, err)
					}
					if !slices.Equal(got, wantDrops) {
						t.Fatalf("round %d (%d deletes, %d inserts): dropped %v, want %v", k, dels, ins, got, wantDrops)
					}
					if g, w := ix.Stats(), ref.Stats(); g != w {
						t.Fatalf("round %d: stats %+v, want %+v", k, g, w)
					}
					if !slices.Equal(mustSnapshot(t, ix), mustSnapshot(t, ref)) {
						t.Fatalf("round %d (%d deletes, %d inserts): tables differ", k, dels, ins)
					}
					if !slices.Equal(st.Hashes()[:dels+ins], hs) || !slices.Equal(st.Locs()[:dels+ins], ls) {
						t.Fatalf("round %d: the call changed the staged jobs", k)
					}
				}
				checkTable(t, ix)
				if ix.Stats().Displaced == 0 && sh.opts.Buckets == 64 {
					t.Error("no displacement drop: the case does not test them")
				}
			})
		}
	}
}

// TestUpdateStagedErrors checks UpdateStaged's argument validation and
// that a location NotFound among the inserts leaves the table and stats
// untouched, on every engine.
func TestUpdateStagedErrors(t *testing.T) {
	for _, e := range testEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ix := newIndex(t, e, Options{Buckets: 1 << 10})
			const n = 100
			st, err := ix.NewStaging(n)
			if err != nil {
				t.Fatal(err)
			}
			keys := newKeySet(newRand(t)).hashes(n, nil)
			mustInsert(t, ix, keys[:n/2], seq(1, n/2))
			copy(st.Hashes(), keys)
			copy(st.Locs(), seq(1, n))
			for _, c := range []struct {
				name      string
				st        *Staging
				dels, ins int
			}{{"more jobs than capacity", st, n / 2, n/2 + 1}, {"negative deletes", st, -1, 2}, {"negative inserts", st, 2, -1}, {"nil staging", nil, 0, 1}} {
				if _, err := ix.UpdateStaged(c.st, c.dels, c.ins, nil); err == nil {
					t.Errorf("%s: accepted", c.name)
				}
			}
			if d, err := ix.UpdateStaged(st, 0, 0, nil); err != nil || len(d) != 0 {
				t.Errorf("empty round: %v, %v", d, err)
			}
			tab, stats := mustSnapshot(t, ix), ix.Stats()
			for _, bad := range []int{n / 2, n - 1} {
				st.Locs()[bad] = NotFound
				if _, err := ix.UpdateStaged(st, n/2, n/2, nil); err == nil {
					t.Errorf("insert job with location NotFound at job %d accepted", bad)
				}
				if !slices.Equal(mustSnapshot(t, ix), tab) || ix.Stats() != stats {
					t.Fatalf("rejected round (NotFound at job %d) changed the table or stats", bad)
				}
				st.Locs()[bad] = uint32(bad + 1)
			}
			// A NotFound among the deletes is only a delete that misses.
			st.Locs()[0] = NotFound
			if _, err := ix.UpdateStaged(st, n/2, n/2, nil); err != nil {
				t.Fatal(err)
			}
			if s := ix.Stats(); s.Deleted != stats.Deleted+n/2-1 || s.Entries != stats.Entries+1 {
				t.Errorf("stats %+v after deleting %d of %d present and inserting %d, before %+v", s, n/2-1, n/2, n/2, stats)
			}
		})
	}
}
