package itemstore

import "testing"

// TestWarmChangesNothing warms linked items of several sizes (the largest
// spanning more than warmSpan), NotFound and locations past the mapped
// pages: every item keeps its key, value, state and reference count, and
// Acquire works as before.
func TestWarmChangesNothing(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 8 << 20})
	sizes := []int{1, 60, 200, 1000, 4000}
	locs := []uint32{NotFound, 1<<31 | 5}
	for i, n := range sizes {
		loc, _ := setRelease(t, s, i, n, 1, 0, 100)
		locs = append(locs, loc)
	}
	ctl := make([]uint64, len(locs))
	for k, loc := range locs {
		if p, idx, ok := s.lookup(loc); ok {
			ctl[k] = p.chunk(idx).ctl.Load()
		}
	}
	s.Warm(locs)
	s.Warm(nil)
	for k, loc := range locs {
		if p, idx, ok := s.lookup(loc); ok {
			if got := p.chunk(idx).ctl.Load(); got != ctl[k] {
				t.Errorf("location %#x: control word %#x after Warm, was %#x", loc, got, ctl[k])
			}
		}
	}
	for i, n := range sizes {
		r, ok := s.Acquire(locs[2+i])
		if !ok {
			t.Fatalf("item %d (%d bytes): Acquire failed after Warm", i, n)
		}
		if string(r.Key()) != string(keyOf(i)) || len(r.Value()) != n {
			t.Errorf("item %d: key %q, %d value bytes after Warm; want %q, %d", i, r.Key(), len(r.Value()), keyOf(i), n)
		}
		if ver, ok := checkValue(r.Value(), i); n >= 8 && (!ok || ver != 1) {
			t.Errorf("item %d: value changed by Warm", i)
		}
		r.Release()
	}
}
