package itemstore

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkFreeLists checks the free-list invariant of every class: each
// location on class c's free list is a Free chunk of a page c owns (in
// c.pages, named by the page table, of class c), never one of the
// never-used chunks takeNew hands out (past bumpNext in the bump page, or
// in a page moved in), listed once, and the list is nfree long.
func checkFreeLists(t *testing.T, s *Store) {
	t.Helper()
	for _, c := range s.classes {
		c.mu.Lock()
		seen := map[uint32]bool{}
		n := 0
		for loc := c.freeHead; loc != NotFound; n++ {
			p, idx, ok := s.lookup(loc)
			switch {
			case seen[loc]:
				c.mu.Unlock()
				t.Fatalf("class %d: location %#x is on the free list twice", c.id, loc)
			case !ok:
				c.mu.Unlock()
				t.Fatalf("class %d: free location %#x is on no mapped page", c.id, loc)
			case p.c != c || !slices.Contains(c.pages, p):
				c.mu.Unlock()
				t.Fatalf("class %d: free location %#x is on a page of class %d (owned by the class: %v)",
					c.id, loc, p.c.id, slices.Contains(c.pages, p))
			case p == c.bump && idx >= c.bumpNext, slices.Contains(c.fresh, p):
				c.mu.Unlock()
				t.Fatalf("class %d: free location %#x is a never-used chunk", c.id, loc)
			}
			h := p.chunk(idx)
			if st := ctlState(h.ctl.Load()); st != stateFree {
				c.mu.Unlock()
				t.Fatalf("class %d: free location %#x is in state %d", c.id, loc, st)
			}
			seen[loc] = true
			loc = uint32(h.cas)
		}
		if n != c.nfree {
			c.mu.Unlock()
			t.Fatalf("class %d: free list of %d chunks, nfree %d", c.id, n, c.nfree)
		}
		c.mu.Unlock()
	}
}

// TestFreeDelayedPastPageMove replays, step by step, the interleaving that
// put a moved page's chunk on its old class's free list: the last
// reference to an unlinked item is released (Dead, no reference), and the
// free that follows waits for the class lock while a move evacuates and
// detaches the item's page (evacuate leaves such a chunk to its pending
// free); the free then runs before the page table names the page's
// replacement. The chunk must not be listed: the class no longer owns the
// page, which is then given back or moved to another class, so a later
// Alloc would take a chunk of no page, or of another class's page.
func TestFreeDelayedPastPageMove(t *testing.T) {
	for _, tc := range []struct {
		name string
		dst  int // class the page moves to, 0: given back
	}{
		{"given back", 0},
		{"moved to class 5", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, Options{MemoryLimit: 2 << 20})
			next := fill(t, s, 0, smallValue, 1)
			c := s.classes[0]
			if c.pageCount() != 2 {
				t.Fatalf("class 1 has %d pages, want 2", c.pageCount())
			}
			// Key 0 is in the class's first page. A reader holds it while
			// it is unlinked: Dead, one reference.
			loc := s.lookupKey(t, 0)
			r, ok := s.Acquire(loc)
			if !ok || !s.Unlink(loc, hashOf(0)) {
				t.Fatal("acquire and unlink of key 0 failed")
			}
			p := r.p

			c.mu.Lock()
			released := make(chan struct{})
			go func() {
				r.Release() // the last reference: frees the chunk, after c.mu
				close(released)
			}()
			for ctlRefs(r.h.ctl.Load()) != 0 {
				time.Sleep(time.Millisecond)
			}
			// The move's steps under the class lock (see move): the page
			// has no referenced chunk now, so it leaves the class.
			victims, ok := c.evacuate(p, 1, nil)
			if !ok {
				c.mu.Unlock()
				t.Fatal("evacuate found the page busy")
			}
			i := slices.Index(c.pages, p)
			c.detach(i)
			c.mu.Unlock()
			<-released // the delayed free has run

			var dst *class
			if tc.dst > 0 {
				dst = s.classes[tc.dst-1]
			}
			s.replacePage(p, dst, time.Now())
			checkFreeLists(t, s)
			if len(victims) != c.perPage-1 {
				t.Fatalf("%d victims, want the page's %d other items", len(victims), c.perPage-1)
			}
			// The class allocates on: from its free list, then by eviction.
			for k := range c.perPage + 10 {
				setRelease(t, s, next+k, smallValue, 2, 0, 2)
			}
			checkFreeLists(t, s)
		})
	}
}

// lookupKey returns the location of the Linked item with key number k, by
// a walk of every class's pages.
func (s *Store) lookupKey(t *testing.T, k int) uint32 {
	t.Helper()
	for _, c := range s.classes {
		c.mu.Lock()
		for _, p := range c.pages {
			for idx := range c.perPage {
				h := p.chunk(idx)
				if ctlState(h.ctl.Load()) == stateLinked && h.hash.Load() == hashOf(k) {
					c.mu.Unlock()
					return p.loc(idx, s.chunkBits)
				}
			}
		}
		c.mu.Unlock()
	}
	t.Fatalf("key %d is not linked", k)
	return NotFound
}

// TestMoveRacesReaders moves pages of a class away while readers acquire,
// check and release its items, holding each reference a moment: a page
// must never move while a reader holds one of its chunks (evacuate finds
// it busy, also when the reference is taken between its two passes), so
// every acquired item keeps its key and value until released, and every
// release finds its reference. The mover gives a page back and rewrites
// the keys, round after round, for a bounded time. (Before the fix, a
// reference taken between evacuate's two passes was killed with the page,
// and its release found the retired memory zeroed and panicked.)
func TestMoveRacesReaders(t *testing.T) {
	const (
		keys    = 15000 // class 1 holds 10922 a page: two pages
		readers = 3
		// The mover runs for at least minTime and minMoves pages given
		// back, and stops at maxTime.
		minTime, minMoves, maxTime = 2 * time.Second, 5, 20 * time.Second
	)
	s := newStore(t, Options{MemoryLimit: 4 << 20})
	index := newSimIndex(keys)
	write := func(now int64) {
		for k := range keys {
			if _, err := index.write(s, k, smallValue, 0, 0, uint64(now), now, nil); err != nil {
				t.Errorf("alloc of key %d: %v", k, err)
				return
			}
		}
	}
	write(1)
	var stop atomic.Bool
	var bad atomic.Int64
	var wg sync.WaitGroup
	for w := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for !stop.Load() {
				k := rng.IntN(keys)
				r, ok := s.Acquire(index.locs[k].Load())
				if !ok {
					continue
				}
				if bytes.Equal(r.Key(), keyOf(k)) {
					for range 20 { // hold it a moment
						if _, ok := checkValue(r.Value(), k); !ok {
							bad.Add(1)
						}
					}
				}
				r.Release()
			}
		})
	}
	// The mover runs in a goroutine of its own, as the readers: a panic
	// (a broken store) then ends the test binary at once instead of
	// leaving the test's cleanup waiting for a class lock.
	moved := 0
	wg.Go(func() {
		defer stop.Store(true)
		start := time.Now()
		for now := int64(2); (time.Since(start) < minTime || moved < minMoves) && time.Since(start) < maxTime && !t.Failed(); now++ {
			victims, ok := s.move(s.classes[0], nil, now, nil, 1)
			index.drop(victims)
			if ok {
				moved++
			}
			write(now)
		}
	})
	wg.Wait()
	t.Logf("%d pages given back under readers", moved)
	if n := bad.Load(); n != 0 {
		t.Fatalf("%d reads of a held item saw a changed value", n)
	}
	if moved < minMoves {
		t.Fatalf("%d pages moved in %v: the test did not exercise moves", moved, maxTime)
	}
	checkFreeLists(t, s)
}
