package itemstore

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMemoryCap allocates items of random sizes (log-uniform) far past the
// memory limit, unlinking some, and checks after every step that mapped
// pages stay under the limit, that every victim is an item the model holds
// at that location with that hash, that no live chunk is handed out again,
// and that only classes that never got a page run out of memory.
func TestMemoryCap(t *testing.T) {
	cases := []struct {
		name     string
		o        Options
		maxValue int
		allocs   int
	}{
		{"16 MiB, values up to a page", Options{MemoryLimit: 16 << 20}, 1<<20 - 100, 20000},
		{"6 MiB of 2 MiB pages", Options{MemoryLimit: 6 << 20, ItemSizeMax: 2 << 20}, 2<<20 - 100, 5000},
		{"4 MiB, small values", Options{MemoryLimit: 4 << 20}, 600, 30000},
		{"3 MiB, factor 2", Options{MemoryLimit: 3 << 20, GrowthFactor: 2}, 300, 30000},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, c.o)
			rng := rand.New(rand.NewPCG(uint64(ci), 1))
			type live struct {
				key  int
				size int64
			}
			model := map[uint32]live{}
			var prev uint32 = NotFound
			var victims []Victim
			oom := 0
			for i := range c.allocs {
				vlen := int(math.Exp(rng.Float64()*math.Log(float64(c.maxValue+1)))) - 1
				class, ok := s.ClassFor(len(keyOf(i)), vlen)
				if !ok {
					t.Fatalf("no class for a %d-byte value", vlen)
				}
				r, vs, err := s.Alloc(hashOf(i), keyOf(i), vlen, 0, 0, uint64(i), int64(i), victims[:0])
				victims = vs
				for _, v := range victims {
					m, ok := model[v.Loc]
					if !ok || hashOf(m.key) != v.Hash {
						t.Fatalf("alloc %d: victim %+v is not a live item (model %+v, %v)", i, v, m, ok)
					}
					delete(model, v.Loc)
				}
				switch {
				case errors.Is(err, ErrOutOfMemory):
					if p := s.Classes()[class-1].Pages; p != 0 {
						t.Fatalf("alloc %d: out of memory in class %d with %d pages: %v", i, class, p, err)
					}
					oom++
				case err != nil:
					t.Fatalf("alloc %d: %v", i, err)
				default:
					if m, ok := model[r.Loc()]; ok {
						t.Fatalf("alloc %d: location %x handed out while item %d lives there", i, r.Loc(), m.key)
					}
					if r.Loc() == NotFound {
						t.Fatalf("alloc %d: location NotFound", i)
					}
					s.Link(r)
					model[r.Loc()] = live{i, int64(r.Size())}
					r.Release()
					if rng.IntN(10) == 0 && prev != NotFound {
						if m, ok := model[prev]; ok {
							if !s.Unlink(prev, hashOf(m.key)) {
								t.Fatalf("alloc %d: unlink of live item %d failed", i, m.key)
							}
							delete(model, prev)
						}
					}
					prev = r.Loc()
				}
				if pages := s.mapped.Load(); pages*int64(s.PageSize()) > s.MemoryLimit() {
					t.Fatalf("alloc %d: %d pages of %d bytes, limit %d", i, pages, s.PageSize(), s.MemoryLimit())
				}
			}
			st := s.Stats()
			if st.PageBytes > st.MemoryLimit || st.Pages != st.MaxPages {
				t.Fatalf("%d pages, %d bytes, limit %d", st.Pages, st.PageBytes, st.MemoryLimit)
			}
			var bytes int64
			for loc, m := range model {
				r, ok := s.Acquire(loc)
				if !ok || string(r.Key()) != string(keyOf(m.key)) {
					t.Fatalf("live item %d at %x not found", m.key, loc)
				}
				r.Release()
				bytes += m.size
			}
			if st.Items != int64(len(model)) || st.ItemBytes != bytes || st.Links != uint64(c.allocs-oom) {
				t.Fatalf("stats %+v; model holds %d items, %d bytes, %d links", st, len(model), bytes, c.allocs-oom)
			}
			if st.Evictions == 0 && s.slabs.evictedNoMem.Load() == 0 {
				t.Fatalf("no eviction, by the sweep or by a page move: %+v", st)
			}
			if linked := countLinked(s); linked != len(model) {
				t.Fatalf("%d chunks Linked, model holds %d", linked, len(model))
			}
			if oom != 0 {
				t.Errorf("%d of %d allocs out of memory: a class without pages takes one from any class that has one", oom, c.allocs)
			}
			t.Logf("%d allocs, %d out of memory, %d evictions, %d pages moved (%d items evicted by moves), %d active classes of %d",
				c.allocs, oom, st.Evictions, s.slabs.moved.Load(), s.slabs.evictedNoMem.Load(), st.ActiveClasses, st.Classes)
		})
	}
}

// countLinked returns the number of Linked chunks in s's pages.
func countLinked(s *Store) int {
	n := 0
	for _, c := range s.classes {
		c.mu.Lock()
		for i := range c.chunks() {
			if h, _ := c.at(i); ctlState(h.ctl.Load()) == stateLinked {
				n++
			}
		}
		c.mu.Unlock()
	}
	return n
}

// TestClassWithoutPagesTakesTheOnlyPage checks the hard memory cap: once
// every page is taken, a class that owns none takes the only page of
// another class (its items become victims) rather than fail, unless
// rebalancing is off (no_slab_reassign), where it fails with
// ErrOutOfMemory as before issue 20.
func TestClassWithoutPagesTakesTheOnlyPage(t *testing.T) {
	for _, noReassign := range []bool{false, true} {
		o := onePage
		o.Slabs.NoReassign = noReassign
		s := newStore(t, o)
		first, _ := setRelease(t, s, 1, smallValue, 1, 0, 0) // class 1 takes the only page
		r, victims, err := s.Alloc(hashOf(2), keyOf(2), 1000, 0, 0, 0, 0, nil)
		st := s.Stats()
		if noReassign {
			if !errors.Is(err, ErrOutOfMemory) || len(victims) != 0 || st.OutOfMemory != 1 || st.ActiveClasses != 1 {
				t.Fatalf("no_slab_reassign: alloc in a class without pages: %v, victims %v, stats %+v; want ErrOutOfMemory", err, victims, st)
			}
			continue
		}
		if err != nil {
			t.Fatalf("alloc in a class without pages: %v", err)
		}
		if len(victims) != 1 || victims[0] != (Victim{Hash: hashOf(1), Loc: first}) {
			t.Fatalf("victims %v, want item 1 at %x", victims, first)
		}
		s.Link(r)
		r.Release()
		cl := s.Classes()
		if cl[0].Pages != 0 || cl[r.Class()-1].Pages != 1 || st.OutOfMemory != 0 || s.slabs.moved.Load() != 1 {
			t.Fatalf("class 1 has %d pages, class %d has %d; stats %+v, %d moved", cl[0].Pages, r.Class(), cl[r.Class()-1].Pages, st, s.slabs.moved.Load())
		}
		if old, ok := s.Acquire(first); ok {
			if string(old.Key()) == string(keyOf(1)) {
				t.Fatal("the moved page's item is still readable")
			}
			old.Release()
		}
	}
}

// TestLocationsInRange allocates every chunk of the smallest class on a
// page table whose last location would be NotFound without the cap, and
// checks each location decodes to its page and chunk.
func TestLocationsInRange(t *testing.T) {
	s := newStore(t, Options{ChunkMin: 16, MemoryLimit: 2 << 20}) // 64-byte chunks, 2^14 a page
	if s.chunkBits != 14 || len(s.table.Load().pages) != 2 {
		t.Fatalf("chunk bits %d, %d pages", s.chunkBits, len(s.table.Load().pages))
	}
	perPage := s.Classes()[0].ChunksPerPage
	seen := map[uint32]bool{}
	for i := range 2 * perPage {
		loc, victims := setRelease(t, s, i, 4, 1, 0, 0) // 48+12+4 = 64 bytes
		if len(victims) != 0 || loc == NotFound || seen[loc] {
			t.Fatalf("alloc %d: location %x (seen %v), %d victims", i, loc, seen[loc], len(victims))
		}
		if page, idx := int(loc>>14), int(loc&(1<<14-1)); page != i/perPage || idx != i%perPage {
			t.Fatalf("alloc %d: location %x is page %d chunk %d", i, loc, page, idx)
		}
		seen[loc] = true
	}
	if _, ok := s.Acquire(NotFound); ok {
		t.Fatal("Acquire(NotFound) succeeded")
	}
}
