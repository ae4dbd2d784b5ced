package itemstore

import (
	"errors"
	"testing"
)

// fillClass fills the first class of a one-page store with keys
// 0..perPage-1 (exptime exp(i)), releasing the writers, and returns the
// store and a map from location to key.
func fillClass(t *testing.T, exp func(i int) int64) (*Store, map[uint32]int) {
	t.Helper()
	s := newStore(t, onePage)
	live := map[uint32]int{}
	for i := range s.Classes()[0].ChunksPerPage {
		loc, victims := setRelease(t, s, i, smallValue, 1, exp(i), 0)
		if len(victims) != 0 {
			t.Fatalf("victims while filling: %v", victims)
		}
		live[loc] = i
	}
	return s, live
}

// evictInto allocates n new keys from first on at time now, removing each
// victim from live (checking it is there) and adding the new items, and
// returns the victims' keys in order.
func evictInto(t *testing.T, s *Store, live map[uint32]int, first, n int, now int64) []int {
	t.Helper()
	var keys []int
	for i := first; i < first+n; i++ {
		loc, victims := setRelease(t, s, i, smallValue, 1, 0, now)
		for _, v := range victims {
			k, ok := live[v.Loc]
			if !ok || hashOf(k) != v.Hash {
				t.Fatalf("victim %+v is not a live item", v)
			}
			keys = append(keys, k)
			delete(live, v.Loc)
		}
		live[loc] = i
	}
	return keys
}

// TestClockSecondChance churns a full class through two turns of new keys
// and checks that a hot set acquired between sweeps survives while the
// same set left untouched is evicted like everything else.
func TestClockSecondChance(t *testing.T) {
	cases := []struct {
		name    string
		acquire bool
	}{
		{"hot set acquired each quarter turn survives", true},
		{"hot set untouched is evicted", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, live := fillClass(t, func(int) int64 { return 0 })
			perPage := len(live)
			hot := func(k int) bool { return k < perPage && k%8 == 0 }
			next := perPage
			for range 8 {
				if c.acquire {
					for loc, k := range live {
						if hot(k) {
							r, ok := s.Acquire(loc)
							if !ok {
								t.Fatalf("live key %d not acquired", k)
							}
							r.Release()
						}
					}
				}
				evictInto(t, s, live, next, perPage/4, 0)
				next += perPage / 4
			}
			hotLeft, coldLeft := 0, 0
			for _, k := range live {
				switch {
				case hot(k):
					hotLeft++
				case k < perPage:
					coldLeft++
				}
			}
			wantHot := 0
			if c.acquire {
				wantHot = (perPage + 7) / 8
			}
			if hotLeft != wantHot || coldLeft != 0 {
				t.Fatalf("%d hot and %d cold original items left, want %d and 0", hotLeft, coldLeft, wantHot)
			}
			if st := s.Stats(); st.Evictions != uint64(8*(perPage/4)) || st.EvictedUnfetched != st.Evictions || st.Reclaimed != 0 {
				t.Fatalf("stats %+v after %d evicting allocs", st, 8*(perPage/4))
			}
		})
	}
}

// TestExpiredPreferred checks which items the sweep takes first when some
// have expired.
func TestExpiredPreferred(t *testing.T) {
	cases := []struct {
		name    string
		exp     func(i int) int64
		acquire bool  // acquire every item first (set every CLOCK bit)
		allocs  int   // evicting allocations, at time 200
		want    []int // victims' keys in order (nil: check wantOdd)
		wantOdd bool  // every victim an odd (expired) key
	}{
		{"expired items go before recently used ones", func(i int) int64 { return int64(100 * (i % 2)) }, true, 200, nil, true},
		{"expired item just ahead of a cold one goes first", func(i int) int64 { return map[bool]int64{true: 100}[i == 5] }, false, 3, []int{5, 0, 1}, false},
		{"expired item past the peek waits for the hand", func(i int) int64 { return map[bool]int64{true: 100}[i == 20] }, false, 3, []int{0, 1, 2}, false},
		{"item expiring later is not expired", func(i int) int64 { return map[bool]int64{true: 300}[i == 5] }, false, 3, []int{0, 1, 2}, false},
		{"expiry at now has expired", func(i int) int64 { return map[bool]int64{true: 200}[i == 5] }, false, 2, []int{5, 0}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, live := fillClass(t, c.exp)
			perPage := len(live)
			if c.acquire {
				for loc := range live {
					r, _ := s.Acquire(loc)
					r.Touch(50)
					r.Release()
				}
			}
			got := evictInto(t, s, live, perPage, c.allocs, 200)
			if len(got) != c.allocs {
				t.Fatalf("%d victims for %d allocs", len(got), c.allocs)
			}
			if c.want != nil && !equalInts(got, c.want) {
				t.Fatalf("victims %v, want %v", got, c.want)
			}
			reclaimed := 0
			for _, k := range got {
				if c.exp(k) != 0 && c.exp(k) <= 200 {
					reclaimed++
				} else if c.wantOdd {
					t.Fatalf("unexpired key %d evicted while expired ones remain", k)
				}
			}
			st := s.Stats()
			if st.Reclaimed != uint64(reclaimed) || st.Evictions != uint64(c.allocs-reclaimed) {
				t.Fatalf("stats %+v, want %d reclaimed", st, reclaimed)
			}
			if c.acquire && (st.ExpiredUnfetched != 0 || st.EvictedUnfetched != 0) {
				t.Fatalf("touched items counted unfetched: %+v", st)
			}
		})
	}
}

// equalInts reports whether a and b hold the same ints in order.
func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSweepGivesUp checks that Alloc fails with ErrOutOfMemory when every
// chunk of the class is referenced or being written, and works again once
// one is released.
func TestSweepGivesUp(t *testing.T) {
	cases := []struct {
		name string
		link bool // link the held items (else they stay Writing)
	}{
		{"all referenced", true},
		{"all being written", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, onePage)
			var held []Ref
			for i := range s.Classes()[0].ChunksPerPage {
				r, _, err := s.Alloc(hashOf(i), keyOf(i), smallValue, 0, 0, 0, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				if c.link {
					s.Link(r)
				}
				held = append(held, r)
			}
			_, victims, err := s.Alloc(hashOf(-1), keyOf(-1), smallValue, 0, 0, 0, 0, nil)
			if !errors.Is(err, ErrOutOfMemory) || len(victims) != 0 {
				t.Fatalf("alloc with everything held: %v, victims %v", err, victims)
			}
			if st := s.Stats(); st.OutOfMemory != 1 {
				t.Fatalf("stats %+v", st)
			}
			held[100].Release()
			loc, victims := setRelease(t, s, -1, smallValue, 1, 0, 0)
			if loc != held[100].Loc() {
				t.Fatalf("alloc took %x, want the released %x", loc, held[100].Loc())
			}
			if c.link != (len(victims) == 1) {
				t.Fatalf("victims %v", victims)
			}
			for i, r := range held {
				if i != 100 {
					r.Release()
				}
			}
		})
	}
}
