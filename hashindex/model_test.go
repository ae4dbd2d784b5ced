package hashindex

import (
	"testing"
)

// model is the index's contract without its layout: the live key -> location
// map. It checks every reported drop and found flag against the contract
// and then every key ever inserted against Search. It assumes distinct
// keys have distinct signatures and locations are never reused (keySet,
// seq).
type model struct {
	live   map[uint64]uint32 // key hash -> location
	locKey map[uint32]uint64 // every location ever inserted -> its key
	seen   []uint64          // every key ever inserted, once
	known  map[uint64]bool   // the keys in seen
}

func newModel() *model {
	return &model{live: map[uint64]uint32{}, locKey: map[uint32]uint64{}, known: map[uint64]bool{}}
}

// insert checks the drops of an insert batch, in job order: a job on a
// live key must drop its previous location as Overwritten; a job on an
// absent key may drop the location of one live entry as Displaced
// (possibly its own).
func (m *model) insert(t testing.TB, hashes []uint64, locs []uint32, dropped []Dropped) {
	t.Helper()
	d := 0
	for j, h := range hashes {
		loc := locs[j]
		if _, dup := m.locKey[loc]; dup {
			t.Fatalf("test bug: location %d reused", loc)
		}
		m.locKey[loc] = h
		old, live := m.live[h]
		if !m.known[h] {
			m.known[h] = true
			m.seen = append(m.seen, h)
		}
		m.live[h] = loc
		var got *Dropped
		if d < len(dropped) && dropped[d].Job == j {
			got = &dropped[d]
			d++
		}
		if d < len(dropped) && dropped[d].Job == j {
			t.Fatalf("job %d dropped twice: %+v, %+v", j, *got, dropped[d])
		}
		switch {
		case live:
			if got == nil || got.Reason != Overwritten || got.Loc != old {
				t.Fatalf("job %d re-inserts a key at %d: want {Loc %d Overwritten}, got %+v", j, loc, old, got)
			}
		case got != nil:
			if got.Reason != Displaced {
				t.Fatalf("job %d inserts a new key: got drop %+v, want none or Displaced", j, *got)
			}
			k, ok := m.locKey[got.Loc]
			if !ok || m.live[k] != got.Loc {
				t.Fatalf("job %d: displaced location %d is not live", j, got.Loc)
			}
			delete(m.live, k)
		}
	}
	if d != len(dropped) {
		t.Fatalf("drops out of job order or past the batch: %+v", dropped[d:])
	}
}

// remove checks the found flags of a delete batch, in job order.
func (m *model) remove(t testing.TB, hashes []uint64, locs []uint32, found []bool) {
	t.Helper()
	for j, h := range hashes {
		loc, live := m.live[h]
		want := live && loc == locs[j]
		if found[j] != want {
			t.Fatalf("delete job %d (loc %d): found %v, want %v", j, locs[j], found[j], want)
		}
		if want {
			delete(m.live, h)
		}
	}
}

// verify searches every key ever inserted and checks the table's
// invariants and entry count.
func (m *model) verify(t testing.TB, ix *Index) {
	t.Helper()
	out := mustSearch(t, ix, m.seen)
	for i, h := range m.seen {
		want, live := m.live[h]
		if !live {
			want = NotFound
		}
		if out[i] != want {
			t.Fatalf("search of key %d (%#x): got %#x, want %#x", i, h, out[i], want)
		}
	}
	if got := checkTable(t, ix); len(got) != len(m.live) {
		t.Fatalf("table holds %d entries, model %d", len(got), len(m.live))
	}
}
