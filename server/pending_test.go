package server

import "testing"

// TestPendingSummaries puts and removes entries in several stripes, some
// sharing a summary bit: lookups find exactly the entries present, a
// stripe's summary has the bit of every entry it holds, and a removal
// clears the bits no remaining entry has, so that the summaries do not
// fill up.
func TestPendingSummaries(t *testing.T) {
	var pt pendingTable
	// Keys 0 and 1 of a stripe share summary bit 0, key 2 has bit 5.
	sub := [...]uint64{0, 0, 5, 9}
	hashOf := func(stripe, k int) uint64 { return uint64(stripe)<<52 | sub[k]<<46 | uint64(k+1) }
	bits := func(ks ...int) (m uint64) {
		for _, k := range ks {
			m |= 1 << sub[k]
		}
		return m
	}
	stripesUsed := []int{0, 1, 63, 64, stripes - 1}
	for _, s := range stripesUsed {
		for k := range 3 {
			if !pt.put(hashOf(s, k), pendingEntry(uint32(s*10+k), k == 2)) {
				t.Fatalf("stripe %d: put %d refused", s, k)
			}
		}
	}
	for _, s := range stripesUsed {
		if got, want := pt.summary[s].Load(), bits(0, 1, 2); got != want {
			t.Errorf("stripe %d: summary %#x, want %#x", s, got, want)
		}
		for k := range 4 {
			w, ok := pt.lookup(hashOf(s, k))
			if want := k < 3; ok != want || (ok && (entryLoc(w) != uint32(s*10+k) || entryDead(w) != (k == 2))) {
				t.Errorf("stripe %d key %d: lookup = %#x, %v", s, k, w, ok)
			}
		}
	}
	if _, ok := pt.lookup(hashOf(2, 0)); ok || pt.summary[2].Load() != 0 {
		t.Errorf("stripe 2 holds nothing: lookup found an entry or its summary is not empty")
	}
	for _, s := range stripesUsed {
		for k := range 3 {
			if k == 1 && pt.remove(hashOf(s, k), pendingEntry(999, false)) {
				t.Errorf("stripe %d: remove of another write's entry succeeded", s)
			}
			if !pt.remove(hashOf(s, k), pendingEntry(uint32(s*10+k), k == 2)) {
				t.Fatalf("stripe %d: remove %d failed", s, k)
			}
			want := [...]uint64{bits(1, 2), bits(2), 0}[k]
			if got := pt.summary[s].Load(); got != want {
				t.Errorf("stripe %d after removing %d of 3 entries: summary %#x, want %#x", s, k+1, got, want)
			}
		}
	}
	for i := range pt.summary {
		if w := pt.summary[i].Load(); w != 0 {
			t.Errorf("summary %d = %#x with the table empty", i, w)
		}
	}
	if n := pt.size(); n != 0 {
		t.Errorf("size %d, want 0", n)
	}
}
