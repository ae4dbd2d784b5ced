package itemstore

import (
	"bytes"
	"errors"
	"testing"
)

// TestLifeCycle walks one item through Writing, Linked, Dead and Free and
// checks what Acquire, Unlink and the counters say at each step.
func TestLifeCycle(t *testing.T) {
	s := newStore(t, onePage)
	const key, ver, exp, now = 7, 3, 5000, 1000
	w, victims, err := s.Alloc(hashOf(key), keyOf(key), 100, 0xabcd, exp, ver, now, nil)
	if err != nil || len(victims) != 0 || !w.Valid() {
		t.Fatalf("alloc: %v, victims %v", err, victims)
	}
	loc := w.Loc()
	if _, ok := s.Acquire(loc); ok {
		t.Fatal("Acquire succeeded on a Writing item")
	}
	if s.Unlink(loc, hashOf(key)) {
		t.Fatal("Unlink succeeded on a Writing item")
	}
	fillValue(w.Value(), key, ver)
	s.Link(w)
	r, ok := s.Acquire(loc)
	if !ok {
		t.Fatal("Acquire failed on a Linked item")
	}
	if v, good := checkValue(r.Value(), key); !good || v != ver || !bytes.Equal(r.Key(), keyOf(key)) ||
		r.Hash() != hashOf(key) || r.Flags() != 0xabcd || r.Exptime() != exp || r.CAS() != ver ||
		r.LastAccess() != now || r.Fetched() || r.Loc() != loc || r.Size() != itemSize(len(keyOf(key)), 100) {
		t.Fatalf("read back key %q hash %x flags %x exp %d cas %d atime %d", r.Key(), r.Hash(), r.Flags(), r.Exptime(), r.CAS(), r.LastAccess())
	}
	if st := s.Stats(); st.Items != 1 || st.ItemBytes != int64(r.Size()) || st.Links != 1 || st.Pages != 1 {
		t.Fatalf("stats after link: %+v", st)
	}
	if s.Unlink(loc, hashOf(key)+1) {
		t.Fatal("Unlink with a wrong hash succeeded")
	}
	r2, ok := s.Acquire(loc)
	if !ok {
		t.Fatal("Unlink with a wrong hash changed the item")
	}
	if !s.Unlink(loc, hashOf(key)) {
		t.Fatal("Unlink failed on a Linked item")
	}
	if s.Unlink(loc, hashOf(key)) {
		t.Fatal("second Unlink succeeded")
	}
	if _, ok := s.Acquire(loc); ok {
		t.Fatal("Acquire succeeded on a Dead item")
	}
	if st := s.Stats(); st.Items != 0 || st.ItemBytes != 0 {
		t.Fatalf("stats after unlink: %+v", st)
	}
	c := s.Classes()[r.Class()-1]
	if c.UsedChunks != 1 {
		t.Fatalf("%d used chunks while a Dead item is referenced", c.UsedChunks)
	}
	r.Release()
	r2.Release()
	if c := s.Classes()[r.Class()-1]; c.UsedChunks != 1 {
		t.Fatalf("%d used chunks while the writer holds a Dead item", c.UsedChunks)
	}
	w.Release()
	if c := s.Classes()[r.Class()-1]; c.UsedChunks != 0 || c.FreeChunks != c.TotalChunks || c.FreeChunksEnd != c.TotalChunks-1 {
		t.Fatalf("class after last release: %+v", c)
	}
	again, _ := setRelease(t, s, key+1, 100, 1, 0, now)
	if again != loc {
		t.Fatalf("next alloc took location %x, want the freed %x", again, loc)
	}
}

// TestRefKeepsDeadChunk checks that a referenced Dead item is never reused,
// even while its class evicts everything else, and that its chunk is
// reused once released.
func TestRefKeepsDeadChunk(t *testing.T) {
	cases := []struct {
		name   string
		unlink bool // unlink the held item (else it stays Linked, referenced)
	}{
		{"dead and referenced", true},
		{"linked and referenced", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, onePage)
			held, _ := set(t, s, 0, smallValue, 1, 0, 0)
			if c.unlink && !s.Unlink(held.Loc(), hashOf(0)) {
				t.Fatal("unlink failed")
			}
			perPage := s.Classes()[0].ChunksPerPage
			evicted := 0
			for i := 1; i <= 3*perPage; i++ {
				loc, victims := setRelease(t, s, i, smallValue, 1, 0, 0)
				evicted += len(victims)
				if loc == held.Loc() {
					t.Fatalf("alloc %d reused the held chunk", i)
				}
				for _, v := range victims {
					if v.Loc == held.Loc() {
						t.Fatalf("held item evicted: %+v", v)
					}
				}
			}
			if evicted < 2*perPage {
				t.Fatalf("%d evictions, want the class churned", evicted)
			}
			if v, ok := checkValue(held.Value(), 0); !ok || v != 1 || !bytes.Equal(held.Key(), keyOf(0)) {
				t.Fatal("held item overwritten")
			}
			held.Release()
			if c.unlink { // freed: the next alloc takes it off the free list
				if loc, _ := setRelease(t, s, -1, smallValue, 1, 0, 0); loc != held.Loc() {
					t.Fatalf("released chunk %x not reused, got %x", held.Loc(), loc)
				}
			}
		})
	}
}

// TestAbort checks that an aborted (or released unlinked) allocation is
// never visible and its chunk is reused.
func TestAbort(t *testing.T) {
	cases := []struct {
		name string
		drop func(*Store, Ref)
	}{
		{"abort", func(s *Store, r Ref) { s.Abort(r) }},
		{"release of a Writing item", func(_ *Store, r Ref) { r.Release() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, onePage)
			r, _, err := s.Alloc(hashOf(1), keyOf(1), smallValue, 0, 0, 0, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			loc := r.Loc()
			c.drop(s, r)
			if _, ok := s.Acquire(loc); ok {
				t.Fatal("aborted item acquired")
			}
			if st := s.Stats(); st.Items != 0 || st.Links != 0 || s.Classes()[0].UsedChunks != 0 {
				t.Fatalf("stats after abort: %+v", st)
			}
			if again, _ := setRelease(t, s, 2, smallValue, 1, 0, 0); again != loc {
				t.Fatalf("aborted chunk %x not reused, got %x", loc, again)
			}
		})
	}
}

// TestMisusePanics checks that the calls that would free a chunk twice or
// publish a reused one panic instead.
func TestMisusePanics(t *testing.T) {
	cases := []struct {
		name   string
		misuse func(*testing.T, *Store)
	}{
		{"double release", func(t *testing.T, s *Store) {
			r, _ := set(t, s, 1, smallValue, 1, 0, 0)
			r.Release()
			r.Release()
		}},
		{"release after the chunk was reused", func(t *testing.T, s *Store) {
			r, _ := set(t, s, 1, smallValue, 1, 0, 0)
			s.Unlink(r.Loc(), hashOf(1))
			r.Release()
			setRelease(t, s, 2, smallValue, 1, 0, 0)
			r.Release()
		}},
		{"link twice", func(t *testing.T, s *Store) {
			r, _ := set(t, s, 1, smallValue, 1, 0, 0)
			s.Link(r)
		}},
		{"abort after link", func(t *testing.T, s *Store) {
			r, _ := set(t, s, 1, smallValue, 1, 0, 0)
			s.Abort(r)
		}},
		{"abort of an acquired reference", func(t *testing.T, s *Store) {
			w, _ := set(t, s, 1, smallValue, 1, 0, 0)
			r, _ := s.Acquire(w.Loc())
			s.Abort(r)
		}},
		{"link after abort", func(t *testing.T, s *Store) {
			r, _, _ := s.Alloc(hashOf(1), keyOf(1), smallValue, 0, 0, 0, 0, nil)
			s.Abort(r)
			s.Link(r)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, onePage)
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			c.misuse(t, s)
		})
	}
}

// TestTouchAndExptime checks the fields that change after linking.
func TestTouchAndExptime(t *testing.T) {
	s := newStore(t, onePage)
	w, _ := set(t, s, 1, smallValue, 1, 100, 10)
	defer w.Release()
	r, _ := s.Acquire(w.Loc())
	defer r.Release()
	if r.Fetched() || r.LastAccess() != 10 || r.Exptime() != 100 {
		t.Fatalf("fresh item: fetched %v atime %d exptime %d", r.Fetched(), r.LastAccess(), r.Exptime())
	}
	r.Touch(20)
	r.SetExptime(0)
	if !w.Fetched() || w.LastAccess() != 20 || w.Exptime() != 0 {
		t.Fatalf("after touch: fetched %v atime %d exptime %d", w.Fetched(), w.LastAccess(), w.Exptime())
	}
	r.Touch(-5)
	if r.LastAccess() != 0 {
		t.Fatalf("negative access time stored as %d", r.LastAccess())
	}
}

// TestAllocErrors checks the errors of Alloc for keys and values out of
// bounds, and that Acquire and Unlink reject locations of no item.
func TestAllocErrors(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 2 << 20, ItemSizeMax: 2 << 10})
	cases := []struct {
		name   string
		keyLen int
		value  int
		want   error
	}{
		{"empty key", 0, 1, ErrKeyLength},
		{"key of 251 bytes", 251, 1, ErrKeyLength},
		{"value over ItemSizeMax", 10, 2<<10 + 1, ErrTooLarge},
		{"negative value", 10, -1, errNegativeValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, victims, err := s.Alloc(1, make([]byte, c.keyLen), c.value, 0, 0, 0, 0, nil)
			if !errors.Is(err, c.want) || r.Valid() || len(victims) != 0 {
				t.Fatalf("Alloc: %v, want %v", err, c.want)
			}
		})
	}
	big := newStore(t, Options{MemoryLimit: 4 << 20, ItemSizeMax: 2 << 20}) // 2 MiB pages
	if _, _, err := big.Alloc(1, []byte("k"), 2<<20, 0, 0, 0, 0, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("value of a whole page: %v, want ErrTooLarge", err)
	}
	if st := s.Stats(); st.Pages != 0 || st.OutOfMemory != 0 {
		t.Fatalf("rejected allocs changed the store: %+v", st)
	}
	for _, loc := range []uint32{0, 1, NotFound, 1 << s.chunkBits} {
		if _, ok := s.Acquire(loc); ok || s.Unlink(loc, 0) {
			t.Fatalf("location %x of an unmapped page accepted", loc)
		}
	}
	setRelease(t, s, 1, smallValue, 1, 0, 0)
	beyond := uint32(s.Classes()[0].ChunksPerPage) // past the last chunk of page 0
	if _, ok := s.Acquire(beyond); ok || s.Unlink(beyond, hashOf(1)) {
		t.Fatalf("location %x past the page's chunks accepted", beyond)
	}
}
