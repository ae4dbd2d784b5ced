package itemstore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/warpkv/warpkv/kv"
)

// fill sets keys from first on with valueLen-byte values at clock now until
// the store has no page left to map, and returns the next key number.
func fill(t *testing.T, s *Store, first, valueLen int, now int64) int {
	t.Helper()
	i := first
	for s.Stats().Pages < s.Stats().MaxPages {
		setRelease(t, s, i, valueLen, 1, 0, now)
		i++
	}
	// Fill the last page too.
	class, _ := s.ClassFor(len(keyOf(i)), valueLen)
	for s.Classes()[class-1].FreeChunks > 0 {
		setRelease(t, s, i, valueLen, 1, 0, now)
		i++
	}
	return i
}

// victimsAreLive checks that every victim names a distinct live item of
// the model (key -> location) and removes it.
func victimsAreLive(t *testing.T, model map[uint32]int, victims []Victim) {
	t.Helper()
	for _, v := range victims {
		k, ok := model[v.Loc]
		if !ok || hashOf(k) != v.Hash {
			t.Fatalf("victim %+v is not a live item (model: key %d, %v)", v, k, ok)
		}
		delete(model, v.Loc)
	}
}

// TestEmptyClassTakesAPage fills a 4-page store with small items, then
// allocates a large one: its class has no page and memory is full, so it
// takes one from the small items' class, whose items in that page are the
// victims; every later large item of that page fits without eviction.
func TestEmptyClassTakesAPage(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 4 << 20})
	model := map[uint32]int{}
	for i := range 40000 {
		r, victims := set(t, s, i, smallValue, 1, 0, 1)
		victimsAreLive(t, model, victims)
		model[r.Loc()] = i
		r.Release()
	}
	small := s.Classes()[0]
	if small.Pages != 4 {
		t.Fatalf("small class has %d pages, want all 4", small.Pages)
	}
	r, victims, err := s.Alloc(hashOf(1e6), keyOf(1e6), 50000, 0, 0, 7, 1, nil)
	if err != nil {
		t.Fatalf("alloc in a class without pages: %v", err)
	}
	victimsAreLive(t, model, victims)
	s.Link(r)
	r.Release()
	st := s.Stats()
	if len(victims) != small.ChunksPerPage || st.Pages != 4 || s.Classes()[0].Pages != 3 {
		t.Fatalf("%d victims (a page holds %d), %d pages mapped, small class has %d", len(victims), small.ChunksPerPage, st.Pages, s.Classes()[0].Pages)
	}
	if got := s.slabs.moved.Load(); got != 1 {
		t.Fatalf("slabs moved %d, want 1", got)
	}
	class, _ := s.ClassFor(len(keyOf(0)), 50000)
	perPage := s.Classes()[class-1].ChunksPerPage
	for i := 1; i < perPage; i++ {
		_, victims := setRelease(t, s, 1e6+i, 50000, 1, 0, 1)
		if len(victims) != 0 {
			t.Fatalf("large item %d: %d victims in a page of its own", i, len(victims))
		}
	}
	// Every small item still in the model is intact.
	for loc, k := range model {
		r, ok := s.Acquire(loc)
		if !ok || !bytes.Equal(r.Key(), keyOf(k)) {
			t.Fatalf("small item %d at %x lost", k, loc)
		}
		if _, ok := checkValue(r.Value(), k); !ok && smallValue >= 8 {
			t.Fatalf("small item %d corrupted", k)
		}
		r.Release()
	}
}

// TestAutomoveByAge fills a store with items last used at second 0; a
// second class then evicting its own items of second 100 takes the old
// class's pages instead, while with automove off it evicts its own.
func TestAutomoveByAge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  SlabPolicy
		moveMin int // pages moved at least
		moveMax int
	}{
		{"automove 1", SlabPolicy{}, 5, 5}, // all but the old class's last page
		{"automove off", SlabPolicy{Automove: AutomoveOff}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, Options{MemoryLimit: 6 << 20, Slabs: tc.policy})
			next := fill(t, s, 0, 200, 0)
			// A second size, written and rewritten at second 100: its
			// class first takes a page (it has none), then its own victims
			// are young and the first class's old.
			for i := range 30000 {
				setRelease(t, s, next+i%3000, 3000, uint64(i), 0, 100)
			}
			moved := int(s.slabs.moved.Load())
			big, _ := s.ClassFor(len(keyOf(next)), 3000)
			pages := s.Classes()[big-1].Pages
			t.Logf("%d pages moved; the 3000-byte class has %d pages, %d evictions", moved, pages, s.Classes()[big-1].Evictions)
			if moved < tc.moveMin || moved > tc.moveMax || pages != moved {
				t.Fatalf("%d pages moved, the new class has %d; want %d to %d", moved, pages, tc.moveMin, tc.moveMax)
			}
			small, _ := s.ClassFor(len(keyOf(0)), 200)
			if s.Classes()[small-1].Pages < 1 {
				t.Fatalf("the old class lost every page")
			}
		})
	}
}

// TestNoAutomoveBetweenYoungClasses writes two sizes in turn, all at the
// same second: neither class's items are older, so no page moves after
// each class got its first.
func TestNoAutomoveBetweenYoungClasses(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 4 << 20})
	for i := range 60000 {
		size := 100
		if i%2 == 1 {
			size = 1000
		}
		setRelease(t, s, i%20000, size, uint64(i), 0, 5)
	}
	if moved := s.slabs.moved.Load(); moved > 1 {
		t.Fatalf("%d pages moved between classes of equally young items", moved)
	}
}

// TestReassign checks slabs reassign: its answers, and the move carried
// out by the next allocation of any class.
func TestReassign(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 4 << 20})
	fill(t, s, 0, smallValue, 1)
	for _, tc := range []struct {
		src, dst int
		want     kv.ReassignResult
	}{
		{1, 1, kv.ReassignSame},
		{0, 2, kv.ReassignBadClass},
		{1, 99, kv.ReassignBadClass},
		{2, 3, kv.ReassignNoSpare},
	} {
		if got := s.Reassign(tc.src, tc.dst); got != tc.want {
			t.Errorf("Reassign(%d, %d) = %v, want %v", tc.src, tc.dst, got, tc.want)
		}
	}
	if got := s.Reassign(1, 5); got != kv.ReassignOK {
		t.Fatalf("Reassign(1, 5) = %v", got)
	}
	if got := s.Reassign(1, 6); got != kv.ReassignRunning {
		t.Fatalf("second Reassign = %v, want running", got)
	}
	_, victims := setRelease(t, s, 1e6, smallValue, 1, 0, 1)
	if len(victims) == 0 || s.Classes()[4].Pages != 1 || s.Classes()[0].Pages != 3 || s.slabs.moved.Load() != 1 {
		t.Fatalf("after the next alloc: %d victims, class 5 has %d pages, class 1 %d", len(victims), s.Classes()[4].Pages, s.Classes()[0].Pages)
	}
	// Giving a page back to the pool: the class that allocates next (the
	// same small class here) maps it again under the limit.
	if got := s.Reassign(-1, 0); got != kv.ReassignOK {
		t.Fatalf("Reassign(-1, 0) = %v", got)
	}
	_, victims = setRelease(t, s, 1e6+1, smallValue, 1, 0, 1)
	if st := s.Stats(); len(victims) != s.Classes()[0].ChunksPerPage || s.slabs.moved.Load() != 2 || st.Pages != 4 || st.Pages > st.MaxPages {
		t.Fatalf("after giving a page back: %d victims, %d moved, %d pages mapped", len(victims), s.slabs.moved.Load(), st.Pages)
	}
	if disabled := newStore(t, Options{Slabs: SlabPolicy{NoReassign: true}}); disabled.Reassign(1, 2) != kv.ReassignDisabled {
		t.Fatal("Reassign with reassignment off did not answer disabled")
	}
}

// TestSetMemoryLimit lowers the limit of a full store: the next
// allocations give pages back until the limit holds; raising it lets
// classes map pages again.
func TestSetMemoryLimit(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 8 << 20})
	next := fill(t, s, 0, 500, 1)
	if err := s.SetMemoryLimit(3 << 20); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		setRelease(t, s, next+i, 500, 1, 0, 1)
	}
	if st := s.Stats(); st.Pages != 3 || st.MaxPages != 3 || st.MemoryLimit != 3<<20 {
		t.Fatalf("after lowering to 3 MiB: %d pages, max %d, limit %d", st.Pages, st.MaxPages, st.MemoryLimit)
	}
	if err := s.SetMemoryLimit(16 << 20); err != nil {
		t.Fatal(err)
	}
	fill(t, s, next+100, 500, 1)
	if st := s.Stats(); st.Pages != 16 {
		t.Fatalf("after raising to 16 MiB: %d pages", st.Pages)
	}
	if err := s.SetMemoryLimit(1000); err == nil {
		t.Fatal("a limit under one page was accepted")
	}
}

// TestMetaMarks checks the meta protocol marks on the control word.
func TestMetaMarks(t *testing.T) {
	s := newStore(t, Options{})
	r, _, err := s.Alloc(hashOf(1), keyOf(1), 4, 0, 0, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.SetMeta(kv.MetaKeyBinary | kv.MetaStale)
	s.Link(r)
	if m := r.Meta(); m != kv.MetaKeyBinary|kv.MetaStale {
		t.Fatalf("marks %b", m)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			a, ok := s.Acquire(r.Loc())
			if ok {
				if a.TakeWin() {
					wins.Add(1)
				}
				a.Release()
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || r.Meta() != kv.MetaKeyBinary|kv.MetaStale|kv.MetaWon {
		t.Fatalf("%d winners, marks %b", wins.Load(), r.Meta())
	}
	r.Release()
}

// TestDump lists a class's linked items.
func TestDump(t *testing.T) {
	s := newStore(t, Options{})
	for i := range 10 {
		setRelease(t, s, i, smallValue, 1, int64(100+i), 1)
	}
	loc, _ := setRelease(t, s, 10, smallValue, 1, 0, 1)
	s.Unlink(loc, hashOf(10))
	seen := 0
	s.Dump(1, func(it DumpItem) bool {
		if !bytes.Equal(it.Key, keyOf(seen)) || it.ValueLen != smallValue || it.Exptime != int64(100+seen) {
			t.Errorf("item %d: %+v", seen, it)
		}
		seen++
		return true
	})
	if seen != 10 {
		t.Fatalf("dumped %d items, want 10", seen)
	}
}

// TestConcurrentMoves runs readers, holders and writers through a
// simulated index while the sizes written change and the clock advances,
// so that pages keep moving between classes: every item acquired under its
// key must hold a value written for that key, also when it was acquired
// through a location whose page moved (the old memory reads as empty, the
// new one holds another class's chunks).
func TestConcurrentMoves(t *testing.T) {
	const (
		workers = 8
		keys    = 20000
		ops     = 40000
	)
	s := newStore(t, Options{MemoryLimit: 12 << 20})
	index := newSimIndex(keys)
	var clock, done atomic.Int64
	// The value size of a key depends on the phase (the clock's tens):
	// phases alternate between small and large items.
	vlen := func(k int, ver uint64) int {
		if (ver/20)%2 == 0 {
			return 16 + k%20
		}
		return 3000 + k%200
	}
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		failed.Store(true)
		t.Errorf(format, args...)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			var held []Ref
			var victims []Victim
			for i := range ops {
				if failed.Load() {
					return
				}
				if i%1000 == 0 {
					clock.Add(1)
				}
				now := clock.Load()
				k := rng.IntN(keys)
				switch op := rng.IntN(100); {
				case op < 50:
					r, ok := s.Acquire(index.locs[k].Load())
					if !ok {
						continue
					}
					if !bytes.Equal(r.Key(), keyOf(k)) {
						r.Release()
						continue
					}
					ver, ok := checkValue(r.Value(), k)
					if !ok || len(r.Value()) != vlen(k, ver) {
						fail("key %d: value of %d bytes, version %d, intact %v", k, len(r.Value()), ver, ok)
					}
					r.Touch(now)
					if op < 5 && len(held) < 3 {
						held = append(held, r)
						continue
					}
					r.Release()
				case op < 95:
					ver := uint64(now)
					var err error
					victims, err = index.write(s, k, vlen(k, ver), 0, 0, ver, now, victims)
					if err != nil && !errors.Is(err, ErrOutOfMemory) {
						fail("alloc: %v", err)
						return
					}
				default:
					for _, h := range held {
						h.Release()
					}
					held = held[:0]
				}
			}
			for _, h := range held {
				h.Release()
			}
			done.Add(1)
		})
	}
	wg.Wait()
	st := s.Stats()
	t.Logf("%d pages moved, %d items evicted from moved pages, %d busy pages skipped; %+v",
		s.slabs.moved.Load(), s.slabs.evictedNoMem.Load(), s.slabs.busyPages.Load(), st)
	if s.slabs.moved.Load() < 4 {
		t.Fatalf("only %d pages moved: the test did not exercise moves", s.slabs.moved.Load())
	}
	if st.PageBytes > st.MemoryLimit {
		t.Fatalf("%d page bytes over the %d limit", st.PageBytes, st.MemoryLimit)
	}
	if linked := countLinked(s); int64(linked) != st.Items {
		t.Fatalf("%d chunks Linked, stats say %d items", linked, st.Items)
	}
	checkFreeLists(t, s)
	for _, c := range s.Classes() {
		if c.UsedChunks != int(c.Items) {
			t.Fatalf("class %d: %d used chunks for %d items with no reference held", c.Class, c.UsedChunks, c.Items)
		}
	}
}

// TestMovedInPagesAreFreeChunks checks the chunk counts of a class that
// got pages from another class and has not begun them: their chunks are
// free (never used), not used, also when several wait their turn.
func TestMovedInPagesAreFreeChunks(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 4 << 20})
	fill(t, s, 0, smallValue, 1)
	class, _ := s.ClassFor(len(keyOf(0)), 500)
	src, dst := s.classes[0], s.classes[class-1]
	for range 2 {
		if _, ok := s.move(src, dst, 1, nil, minSourcePages); !ok {
			t.Fatal("no page moved")
		}
	}
	st := s.Classes()[class-1]
	if st.Pages != 2 || st.UsedChunks != 0 || st.FreeChunks != 2*st.ChunksPerPage || st.FreeChunksEnd != 0 {
		t.Fatalf("class %d after two pages moved in: %+v", class, st)
	}
	setRelease(t, s, 1e6, 500, 1, 0, 1)
	st = s.Classes()[class-1]
	if st.UsedChunks != 1 || st.FreeChunks != 2*st.ChunksPerPage-1 || st.FreeChunksEnd != st.ChunksPerPage-1 {
		t.Fatalf("class %d after one item: %+v", class, st)
	}
	checkFreeLists(t, s)
}

// TestClassWithEveryChunkInFlightTakesAPage fills a two-page store with one
// small item and one item of the one-chunk class, keeps a reference to the
// latter (a reader, or the server's pending table) and allocates another
// one-chunk item: the sweep finds nothing to evict, so the class takes the
// other class's only page rather than fail.
func TestClassWithEveryChunkInFlightTakesAPage(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 2 << 20})
	setRelease(t, s, 0, smallValue, 1, 0, 0)
	big := s.PageSize() - 200
	held, _ := set(t, s, 1, big, 1, 0, 0)
	defer held.Release()
	r, victims, err := s.Alloc(hashOf(2), keyOf(2), big, 0, 0, 0, 0, nil)
	if err != nil {
		t.Fatalf("alloc beside a referenced item of its one-chunk class: %v", err)
	}
	s.Link(r)
	r.Release()
	if len(victims) != 1 || victims[0].Hash != hashOf(0) {
		t.Fatalf("victims %v, want the small item", victims)
	}
	if cl := s.Classes(); cl[0].Pages != 0 || cl[held.Class()-1].Pages != 2 {
		t.Fatalf("class 1 has %d pages, class %d %d; want 0 and 2", cl[0].Pages, held.Class(), cl[held.Class()-1].Pages)
	}
}
