package itemstore

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// TestUnlinksAsUnlink unlinks the same items of several classes with
// Store.Unlink in one store and with an Unlinks in another, and checks
// that every answer is the same, that the kept chunks reach the free
// lists only at Flush, and that a chunk still referenced by a reader is
// freed by the reader's release, not kept.
func TestUnlinksAsUnlink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []int // value lengths dealt to the keys in turn: one class each
		held   int   // every held-th key is acquired by a reader before the unlink (0: none)
	}{
		{"one class", []int{smallValue}, 0},
		{"three classes", []int{smallValue, 200, 3000}, 0},
		{"three classes, readers hold some", []int{smallValue, 200, 3000}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const keys = 3000
			plain := newStore(t, Options{MemoryLimit: 64 << 20})
			kept := newStore(t, Options{MemoryLimit: 64 << 20})
			locs := [2][]uint32{}
			for j, s := range []*Store{plain, kept} {
				for k := range keys {
					loc, _ := setRelease(t, s, k, tc.values[k%len(tc.values)], 1, 0, 1)
					locs[j] = append(locs[j], loc)
				}
			}
			rng := rand.New(rand.NewPCG(7, 11))
			u := kept.Unlinks()
			var readers [2][]Ref
			wantKept := 0
			for k := range keys {
				// Some calls name a wrong hash, some an item already unlinked.
				h := hashOf(k)
				if rng.IntN(10) == 0 {
					h++
				}
				twice := rng.IntN(10) == 0
				held := tc.held > 0 && k%tc.held == 0
				for j, s := range []*Store{plain, kept} {
					if held {
						r, ok := s.Acquire(locs[j][k])
						if !ok {
							t.Fatalf("store %d: acquire of key %d failed", j, k)
						}
						readers[j] = append(readers[j], r)
					}
				}
				got, want := u.Unlink(locs[1][k], h), plain.Unlink(locs[0][k], h)
				if got != want {
					t.Fatalf("key %d: Unlinks.Unlink = %v, Store.Unlink = %v", k, got, want)
				}
				if got && !held {
					wantKept++
				}
				if twice && (u.Unlink(locs[1][k], h) || plain.Unlink(locs[0][k], h)) {
					t.Fatalf("key %d: a second unlink succeeded", k)
				}
				if r, ok := kept.Acquire(locs[1][k]); ok {
					r.Release()
					if got {
						t.Fatalf("key %d: acquired after its unlink", k)
					}
				}
			}
			if u.Kept() != wantKept {
				t.Fatalf("%d chunks kept, want %d", u.Kept(), wantKept)
			}
			free := func(s *Store) int {
				n := 0
				for _, c := range s.classes {
					c.mu.Lock()
					n += c.nfree
					c.mu.Unlock()
				}
				return n
			}
			if n := free(kept); n != 0 {
				t.Fatalf("%d chunks on the free lists before Flush, want 0", n)
			}
			u.Flush()
			if u.Kept() != 0 {
				t.Fatalf("%d chunks kept after Flush", u.Kept())
			}
			for j := range readers {
				for _, r := range readers[j] {
					r.Release()
				}
			}
			if a, b := free(kept), free(plain); a != b {
				t.Fatalf("%d chunks on the free lists after Flush and the readers' releases, Store.Unlink's store %d", a, b)
			}
			checkFreeLists(t, kept)
			if a, b := kept.Stats().Items, plain.Stats().Items; a != b {
				t.Fatalf("%d items linked, Store.Unlink's store %d", a, b)
			}
		})
	}
}

// TestUnlinksRaceAllocations unlinks and flushes on one goroutine while
// others allocate, link and read items of the same class, as the server's
// scheduler does beside its connections: every allocation gets a chunk no
// linked item holds, every read finds its own key, and the free lists stay
// whole. Run it with -race.
func TestUnlinksRaceAllocations(t *testing.T) {
	const (
		writers = 3
		perKeys = 2000 // keys of each writer
		rounds  = 5
	)
	s := newStore(t, Options{MemoryLimit: 16 << 20})
	var wg sync.WaitGroup
	type dead struct {
		loc  uint32
		hash uint64
	}
	ch := make(chan []dead, writers*rounds)
	for w := range writers {
		wg.Go(func() {
			var prev []dead
			for round := range rounds {
				var cur []dead
				for k := w * perKeys; k < (w+1)*perKeys; k++ {
					r, _ := set(t, s, k, smallValue, uint64(round+1), 0, 1)
					if string(r.Key()) != string(keyOf(k)) {
						t.Errorf("key %d: a fresh item reads key %q", k, r.Key())
					}
					cur = append(cur, dead{r.Loc(), hashOf(k)})
					r.Release()
				}
				if prev != nil {
					ch <- prev // the previous round's items, now replaced
				}
				prev = cur
			}
		})
	}
	done := make(chan struct{})
	go func() {
		u := s.Unlinks()
		for list := range ch {
			for _, d := range list {
				u.Unlink(d.loc, d.hash)
			}
			u.Flush()
		}
		close(done)
	}()
	wg.Wait()
	close(ch)
	<-done
	checkFreeLists(t, s)
	if got, want := s.Stats().Items, int64(writers*perKeys); got != want {
		t.Fatalf("%d items linked, want %d (each key's last version)", got, want)
	}
}

// TestUnlinksMatch unlinks by part of the key hash: a mask's bits must
// match and the others may differ; mask 0 takes any Linked item.
func TestUnlinksMatch(t *testing.T) {
	const sig = 0xffffffff << 32
	for _, tc := range []struct {
		name       string
		hash, mask uint64 // given for key 1's item
		want       bool
	}{
		{"whole hash", hashOf(1), ^uint64(0), true},
		{"whole hash, one low bit off", hashOf(1) ^ 1, ^uint64(0), false},
		{"signature, low bits off", hashOf(1) ^ 0xffff, sig, true},
		{"signature off by a bit", hashOf(1) ^ 1<<40, sig, false},
		{"any item", 12345, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, onePage)
			loc, _ := setRelease(t, s, 1, smallValue, 1, 0, 1)
			u := s.Unlinks()
			if got := u.UnlinkMatch(loc, tc.hash, tc.mask); got != tc.want {
				t.Fatalf("UnlinkMatch(%#x, mask %#x) = %v, want %v", tc.hash, tc.mask, got, tc.want)
			}
			u.Flush()
			r, ok := s.Acquire(loc)
			if ok {
				r.Release()
			}
			if ok == tc.want {
				t.Fatalf("after UnlinkMatch = %v the item is linked: %v", tc.want, ok)
			}
			if u.UnlinkMatch(loc, tc.hash, 0) != !tc.want {
				t.Fatalf("a second unlink of any item: want %v", !tc.want)
			}
			u.Flush()
			checkFreeLists(t, s)
		})
	}
}
