package itemstore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentUse runs goroutines that set, get, hold and delete keys
// through a simulated hash index (one atomic location per key) on a store
// small enough to evict constantly, and checks that every item acquired
// under its key holds exactly a value written for that key (derived from
// key and version, with the version's flags, CAS and length), also while
// references are held across other goroutines' evictions and unlinks.
func TestConcurrentUse(t *testing.T) {
	const (
		workers = 8
		keys    = 60000
		ops     = 25000 // per worker: about 80000 sets, enough to fill the store 2.5 times
	)
	// Values of 10 to 80 bytes with 12-byte keys: classes 1 to 3, 4 pages.
	s := newStore(t, Options{MemoryLimit: 4 << 20})
	vlen := func(k int, ver uint64) int { return 10 + int((uint64(k)*7+ver)%71) }
	index := newSimIndex(keys)
	versions := make([]atomic.Uint64, keys)
	var hits, stale, sets, oom atomic.Int64
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		failed.Store(true)
		t.Errorf(format, args...)
	}
	// check verifies an item acquired under key k.
	check := func(r Ref, k int) {
		ver, ok := checkValue(r.Value(), k)
		if !ok || len(r.Value()) != vlen(k, ver) || r.Flags() != uint32(ver) || r.CAS() != ver || r.Hash() != hashOf(k) {
			fail("key %d at %x: value len %d version %d ok %v flags %d cas %d", k, r.Loc(), len(r.Value()), ver, ok, r.Flags(), r.CAS())
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			type holding struct {
				r Ref
				k int
			}
			var held []holding
			var victims []Victim
			for i := range ops {
				if failed.Load() {
					return
				}
				if i%1000 == 0 {
					if st := s.Stats(); st.PageBytes > st.MemoryLimit {
						fail("%d page bytes over the %d limit", st.PageBytes, st.MemoryLimit)
					}
				}
				k := rng.IntN(keys)
				switch op := rng.IntN(100); {
				case op < 45: // get
					loc := index.locs[k].Load()
					r, ok := s.Acquire(loc)
					if !ok {
						continue
					}
					if !bytes.Equal(r.Key(), keyOf(k)) {
						stale.Add(1)
						r.Release()
						continue
					}
					hits.Add(1)
					check(r, k)
					if op < 5 && len(held) < 4 {
						r.Touch(2)
						held = append(held, holding{r, k})
						continue
					}
					r.Release()
				case op < 85: // set
					ver := versions[k].Add(1)
					exptime := int64(0)
					if op < 50 {
						exptime = 1 // already expired at now = 2: reclaimable at once
					}
					var err error
					victims, err = index.write(s, k, vlen(k, ver), uint32(ver), exptime, ver, 2, victims)
					if errors.Is(err, ErrOutOfMemory) {
						oom.Add(1)
						continue
					}
					if err != nil {
						fail("alloc: %v", err)
						return
					}
					sets.Add(1)
				case op < 90: // delete
					if old := index.locs[k].Swap(NotFound); old != NotFound {
						s.Unlink(old, hashOf(k))
					}
				default: // release a held reference, checking it is intact
					if len(held) > 0 {
						h := held[0]
						held = held[1:]
						if !bytes.Equal(h.r.Key(), keyOf(h.k)) {
							fail("held key %d changed to %q", h.k, h.r.Key())
						}
						check(h.r, h.k)
						h.r.Release()
					}
				}
			}
			for _, h := range held {
				check(h.r, h.k)
				h.r.Release()
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	t.Logf("%d sets, %d hits, %d stale, %d out of memory; %+v", sets.Load(), hits.Load(), stale.Load(), oom.Load(), st)
	if hits.Load() == 0 || st.Evictions+st.Reclaimed == 0 {
		t.Fatalf("test did not exercise reads and eviction")
	}
	if oom.Load() != 0 {
		for _, c := range s.Classes() {
			if c.OutOfMemory != 0 && c.Pages != 0 {
				t.Fatalf("class %d with %d pages ran out of memory", c.Class, c.Pages)
			}
		}
	}
	if linked := countLinked(s); int64(linked) != st.Items {
		t.Fatalf("%d chunks Linked, stats say %d items", linked, st.Items)
	}
	for _, c := range s.Classes() {
		if c.UsedChunks != int(c.Items) {
			t.Fatalf("class %d: %d used chunks for %d items with no reference held", c.Class, c.UsedChunks, c.Items)
		}
	}
}
