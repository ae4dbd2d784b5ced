package itemstore

import "testing"

// TestHoldCountsInsideTheLimit fills an 8-page store, then holds memory
// outside it (the server's half-received values): the held bytes take
// whole pages from the limit, the next allocations give pages back until
// mapped and held pages fit in it, holds past seven eighths of the limit
// are refused, and unheld pages can be mapped again.
func TestHoldCountsInsideTheLimit(t *testing.T) {
	s := newStore(t, Options{MemoryLimit: 8 << 20})
	const value = 1000
	i := 0
	for s.mapped.Load() < 8 {
		setRelease(t, s, i, value, 1, 0, 0)
		i++
	}
	if !s.Hold(2<<20 + 1) { // three pages
		t.Fatal("hold of 2 MiB + 1 byte refused")
	}
	if s.Hold(5 << 20) { // eight pages: more than 8 - 8/8
		t.Fatal("hold past seven eighths of the limit granted")
	}
	if !s.Hold(5<<20 - 1) { // seven pages
		t.Fatal("hold up to seven eighths of the limit refused")
	}
	s.Unhold(5<<20 - 1)
	if got := s.Held(); got != 2<<20+1 {
		t.Fatalf("held %d bytes, want %d", got, 2<<20+1)
	}
	victims := 0
	for range 10 {
		_, vs := setRelease(t, s, i, value, 1, 0, 1)
		victims += len(vs)
		i++
	}
	if got := s.mapped.Load(); got != 5 {
		t.Fatalf("%d pages mapped with 3 held of 8, want 5", got)
	}
	if victims == 0 {
		t.Fatal("pages given back without victims")
	}
	s.Unhold(2<<20 + 1)
	for s.mapped.Load() < 8 && i < 100_000 {
		setRelease(t, s, i, value, 1, 0, 2)
		i++
	}
	if got := s.mapped.Load(); got != 8 || s.Held() != 0 {
		t.Fatalf("after Unhold: %d pages mapped, %d bytes held; want 8 and 0", got, s.Held())
	}
}
