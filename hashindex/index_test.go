package hashindex

import (
	"fmt"
	"slices"
	"testing"
)

// batchSizes are the batch sizes every engine is checked at: empty, one,
// the edges around a warp, a few units of work, and a large batch (smaller
// under -short).
func batchSizes() []int {
	large := 1 << 20
	if testing.Short() {
		large = 1 << 16
	}
	return []int{0, 1, 31, 33, 1000, large}
}

// TestInsertSearch inserts one batch of distinct keys at about half load
// and checks that every key not reported dropped is found at its location,
// and every dropped one is absent.
func TestInsertSearch(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, n := range batchSizes() {
			t.Run(fmt.Sprintf("%s/n=%d", e.name, n), func(t *testing.T) {
				ks := newKeySet(newRand(t))
				ix := newIndex(t, e, Options{Buckets: max(n/4, 16)})
				m := newModel()
				hashes, locs := ks.hashes(n, nil), seq(1, n)
				m.insert(t, hashes, locs, mustInsert(t, ix, hashes, locs))
				m.verify(t, ix)
				st := ix.Stats()
				if st.Inserts != uint64(n) || st.Overwrites != 0 || st.Entries+st.Displaced != uint64(n) {
					t.Fatalf("stats %+v after %d distinct inserts", st, n)
				}
			})
		}
	}
}

// TestOverwrite checks that inserting a key again replaces its location
// and reports the old one, across calls and within one call.
func TestOverwrite(t *testing.T) {
	cases := []struct {
		name    string
		batches [][]int // per batch, the key of each job (indices into a key list)
	}{
		{"across calls", [][]int{{0}, {0}, {0}}},
		{"within a call", [][]int{{0, 0, 0}}},
		{"interleaved", [][]int{{0, 1, 0, 2, 1, 0}, {2, 2, 1}}},
		{"after others", [][]int{{3, 4, 5, 6, 7}, {7, 6, 5, 4, 3}}},
	}
	for _, e := range testEngines(t) {
		for _, c := range cases {
			t.Run(e.name+"/"+c.name, func(t *testing.T) {
				ks := newKeySet(newRand(t))
				keys := ks.hashes(8, nil)
				ix := newIndex(t, e, Options{Buckets: 64})
				m := newModel()
				next := uint32(1)
				var overwrites uint64
				for _, b := range c.batches {
					hashes := make([]uint64, len(b))
					for j, k := range b {
						hashes[j] = keys[k]
					}
					locs := seq(next, len(b))
					next += uint32(len(b))
					d := mustInsert(t, ix, hashes, locs)
					for _, x := range d {
						if x.Reason != Overwritten {
							t.Fatalf("unexpected drop %+v", x)
						}
					}
					overwrites += uint64(len(d))
					m.insert(t, hashes, locs, d)
					m.verify(t, ix)
				}
				if st := ix.Stats(); st.Overwrites != overwrites || st.Entries != uint64(len(m.live)) {
					t.Fatalf("stats %+v, want %d overwrites and %d entries", st, overwrites, len(m.live))
				}
			})
		}
	}
}

// TestDuplicatesInBatch inserts batches where every key appears several
// times, small (applied in order on one goroutine by the CPU engine) and
// large (grouped by partition): the last location wins and every earlier
// one is reported overwritten by the job that replaced it.
func TestDuplicatesInBatch(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, n := range []int{10, 1000, 1 << 15} {
			t.Run(fmt.Sprintf("%s/n=%d", e.name, n), func(t *testing.T) {
				r := newRand(t)
				ks := newKeySet(r)
				keys := ks.hashes(max(1, n/4), nil)
				ix := newIndex(t, e, Options{Buckets: 4 * n}) // low load: no displacement
				hashes := make([]uint64, n)
				for i := range hashes {
					hashes[i] = keys[r.IntN(len(keys))]
				}
				locs := seq(1, n)
				d := mustInsert(t, ix, hashes, locs)
				last := map[uint64]int{}
				var want []Dropped
				for j, h := range hashes {
					if prev, ok := last[h]; ok {
						want = append(want, Dropped{Job: j, Loc: locs[prev], Reason: Overwritten})
					}
					last[h] = j
				}
				if !slices.Equal(d, want) {
					t.Fatalf("dropped %d entries, want %d; first difference in %v vs %v", len(d), len(want), head(d), head(want))
				}
				m := newModel()
				m.insert(t, hashes, locs, d)
				m.verify(t, ix)
			})
		}
	}
}

func head(d []Dropped) []Dropped { return d[:min(len(d), 5)] }

// TestDelete checks that a delete needs the matching location, reports
// whether it found the cell, and that duplicates in one batch find it once.
func TestDelete(t *testing.T) {
	type job struct {
		key  int
		loc  uint32
		want bool
	}
	cases := []struct {
		name    string
		deletes [][]job // keys 0..3 are inserted at locations 1..4 first
	}{
		{"wrong location", [][]job{{{0, 2, false}, {0, 99, false}}, {{0, 1, true}}}},
		{"right location", [][]job{{{1, 2, true}}, {{1, 2, false}}}},
		{"unknown key", [][]job{{{5, 1, false}}}},
		{"duplicate in batch", [][]job{{{2, 3, true}, {2, 3, false}, {3, 4, true}}}},
		{"all", [][]job{{{3, 4, true}, {2, 3, true}, {1, 2, true}, {0, 1, true}}}},
	}
	for _, e := range testEngines(t) {
		for _, c := range cases {
			t.Run(e.name+"/"+c.name, func(t *testing.T) {
				keys := newKeySet(newRand(t)).hashes(6, nil)
				ix := newIndex(t, e, Options{Buckets: 32})
				m := newModel()
				m.insert(t, keys[:4], seq(1, 4), mustInsert(t, ix, keys[:4], seq(1, 4)))
				for _, b := range c.deletes {
					hashes, locs := make([]uint64, len(b)), make([]uint32, len(b))
					for j, d := range b {
						hashes[j], locs[j] = keys[d.key], d.loc
					}
					found := mustDelete(t, ix, hashes, locs)
					for j, d := range b {
						if found[j] != d.want {
							t.Fatalf("delete %d (key %d, loc %d): found %v, want %v", j, d.key, d.loc, found[j], d.want)
						}
					}
					m.remove(t, hashes, locs, found)
					m.verify(t, ix)
				}
				// Deleted keys can come back.
				m.insert(t, keys[:4], seq(100, 4), mustInsert(t, ix, keys[:4], seq(100, 4)))
				m.verify(t, ix)
			})
		}
	}
}

// TestDeleteBulk deletes half of a large batch with the right locations,
// a quarter with wrong ones, and absent keys, in one shuffled batch.
func TestDeleteBulk(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, n := range batchSizes()[1:] {
			t.Run(fmt.Sprintf("%s/n=%d", e.name, n), func(t *testing.T) {
				r := newRand(t)
				ks := newKeySet(r)
				ix := newIndex(t, e, Options{Buckets: max(n/4, 16)})
				m := newModel()
				hashes, locs := ks.hashes(n, nil), seq(1, n)
				m.insert(t, hashes, locs, mustInsert(t, ix, hashes, locs))
				var dh []uint64
				var dl []uint32
				for i := range n {
					switch i % 4 {
					case 0, 1:
						dh, dl = append(dh, hashes[i]), append(dl, locs[i])
					case 2:
						dh, dl = append(dh, hashes[i]), append(dl, locs[i]+1)
					}
				}
				absent := ks.hashes(n/8, nil)
				dh = append(dh, absent...)
				dl = append(dl, seq(1, len(absent))...)
				r.Shuffle(len(dh), func(i, j int) { dh[i], dh[j] = dh[j], dh[i]; dl[i], dl[j] = dl[j], dl[i] })
				found := mustDelete(t, ix, dh, dl)
				m.remove(t, dh, dl, found)
				m.verify(t, ix)
				if st := ix.Stats(); st.Deletes != uint64(len(dh)) {
					t.Fatalf("stats %+v after %d deletes", st, len(dh))
				}
			})
		}
	}
}

// TestHighLoad fills tables to 95% of their cells in batches, so that
// inserts displace entries and some chains give up, and checks every drop
// and every key after each batch.
func TestHighLoad(t *testing.T) {
	cases := []struct {
		name string
		opts Options
	}{
		{"default", Options{Buckets: 1 << 12}},
		{"no displacement", Options{Buckets: 1 << 12, MaxDisplacements: -1}},
		{"long chains", Options{Buckets: 1 << 12, MaxDisplacements: 64}},
		{"one displacement", Options{Buckets: 1 << 10, MaxDisplacements: 1}},
		{"pair partitions", Options{Buckets: 1 << 12, PartitionBits: 1}},
		{"one partition", Options{Buckets: 1 << 12, PartitionBits: 12}},
	}
	for _, e := range testEngines(t) {
		for _, c := range cases {
			t.Run(e.name+"/"+c.name, func(t *testing.T) {
				ks := newKeySet(newRand(t))
				ix := newIndex(t, e, c.opts)
				m := newModel()
				target := ix.Capacity() * 95 / 100
				next := uint32(1)
				for len(m.live) < target && next < uint32(3*ix.Capacity()) {
					n := min(ix.Capacity()/10, target-len(m.live))
					hashes, locs := ks.hashes(n, nil), seq(next, n)
					next += uint32(n)
					m.insert(t, hashes, locs, mustInsert(t, ix, hashes, locs))
					m.verify(t, ix)
				}
				st := ix.Stats()
				t.Logf("load %.3f after %d inserts, %d displaced", float64(st.Entries)/float64(ix.Capacity()), st.Inserts, st.Displaced)
				if len(m.live) < target {
					t.Fatalf("table stuck at %d of %d entries", len(m.live), target)
				}
				if st.Displaced == 0 {
					t.Fatalf("no displacement drops at 95%% load: the test does not reach the chains")
				}
			})
		}
	}
}

// TestOnePartition sends every job into one partition, more jobs than its
// cells, and checks the drops and that no other partition is touched.
func TestOnePartition(t *testing.T) {
	const buckets, pbits, part = 1 << 10, 4, 5
	into := func(h uint64) uint64 {
		const field = uint64(buckets-1) &^ (1<<pbits - 1)
		return h&^field | part<<pbits
	}
	for _, e := range testEngines(t) {
		for _, n := range []int{100, 1000, 1 << 14} {
			t.Run(fmt.Sprintf("%s/n=%d", e.name, n), func(t *testing.T) {
				ks := newKeySet(newRand(t))
				ix := newIndex(t, e, Options{Buckets: buckets, PartitionBits: pbits})
				m := newModel()
				next := uint32(1)
				for range 2 {
					hashes, locs := ks.hashes(n, into), seq(next, n)
					next += uint32(n)
					for _, h := range hashes {
						if ix.Partition(h) != part {
							t.Fatalf("test bug: %#x in partition %d", h, ix.Partition(h))
						}
					}
					m.insert(t, hashes, locs, mustInsert(t, ix, hashes, locs))
					m.verify(t, ix)
				}
				tab := mustSnapshot(t, ix)
				for b := range buckets {
					if b>>pbits == part {
						continue
					}
					if slices.ContainsFunc(tab[b*BucketWords:(b+1)*BucketWords], func(w uint32) bool { return w != 0 }) {
						t.Fatalf("bucket %d outside partition %d written", b, part)
					}
				}
			})
		}
	}
}

// TestReset checks that Reset empties the table and the stats.
func TestReset(t *testing.T) {
	for _, e := range testEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			keys := newKeySet(newRand(t)).hashes(100, nil)
			ix := newIndex(t, e, Options{Buckets: 64})
			mustInsert(t, ix, keys, seq(1, 100))
			if err := ix.Reset(); err != nil {
				t.Fatal(err)
			}
			if st := ix.Stats(); st != (Stats{}) {
				t.Fatalf("stats after reset: %+v", st)
			}
			for i, l := range mustSearch(t, ix, keys) {
				if l != NotFound {
					t.Fatalf("key %d found at %d after reset", i, l)
				}
			}
			if slices.ContainsFunc(mustSnapshot(t, ix), func(w uint32) bool { return w != 0 }) {
				t.Fatal("table not empty after reset")
			}
		})
	}
}

// TestErrors checks argument validation and use after Close.
func TestErrors(t *testing.T) {
	for _, e := range testEngines(t) {
		t.Run(e.name, func(t *testing.T) {
			ix := newIndex(t, e, Options{Buckets: 16})
			h := []uint64{1, 2}
			if _, err := ix.Insert(h, []uint32{1}, nil); err == nil {
				t.Error("insert with fewer locations than hashes succeeded")
			}
			if _, err := ix.Insert(h, []uint32{1, NotFound}, nil); err == nil {
				t.Error("insert of location NotFound succeeded")
			}
			if err := ix.Search(h, make([]uint32, 1)); err == nil {
				t.Error("search with a short output succeeded")
			}
			if err := ix.Delete(h, []uint32{1, 2}, make([]bool, 1)); err == nil {
				t.Error("delete with a short output succeeded")
			}
			if err := ix.Delete(h, []uint32{1}, make([]bool, 2)); err == nil {
				t.Error("delete with fewer locations than hashes succeeded")
			}
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			if err := ix.Search(h, make([]uint32, 2)); err == nil {
				t.Error("search after close succeeded")
			}
			if _, err := ix.Insert(h, []uint32{1, 2}, nil); err == nil {
				t.Error("insert after close succeeded")
			}
			if err := ix.Close(); err != nil {
				t.Errorf("second close: %v", err)
			}
		})
	}
}

// TestCPUDevCalls checks that the device entry points refuse the CPU
// engine.
func TestCPUDevCalls(t *testing.T) {
	ix := newIndex(t, testEngines(t)[0], Options{Buckets: 16})
	if ix.Stream() != nil || ix.Device() != nil {
		t.Error("cpu engine has a stream or device")
	}
	if err := ix.DevSearch(nil, 0, nil); err == nil {
		t.Error("DevSearch on the cpu engine succeeded")
	}
	if err := ix.DevInsert(DevJobs{}, nil); err == nil {
		t.Error("DevInsert on the cpu engine succeeded")
	}
	if _, err := ix.UploadJobs(Jobs{}); err == nil {
		t.Error("UploadJobs on the cpu engine succeeded")
	}
	if _, err := ix.DevGroup(nil, nil, 0, DevJobs{}); err == nil {
		t.Error("DevGroup on the cpu engine succeeded")
	}
	if _, err := ix.AllocJobs(1); err == nil {
		t.Error("AllocJobs on the cpu engine succeeded")
	}
}
