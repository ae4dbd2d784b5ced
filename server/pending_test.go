package server

import "testing"

// TestPendingBusyBits puts and removes entries in one stripe and in its
// neighbours (sharing a bitmap word): lookups find exactly the entries
// present, and a stripe's busy bit is set while it holds entries and clear
// once the last is removed, so a lookup of an empty stripe never misses an
// entry and the bitmap does not fill up.
func TestPendingBusyBits(t *testing.T) {
	var pt pendingTable
	hashOf := func(stripe, k int) uint64 { return uint64(stripe)<<52 | uint64(k+1) }
	stripesUsed := []int{0, 1, 63, 64, stripes - 1}
	for _, s := range stripesUsed {
		for k := range 3 {
			if !pt.put(hashOf(s, k), pendingEntry(uint32(s*10+k), k == 2)) {
				t.Fatalf("stripe %d: put %d refused", s, k)
			}
		}
	}
	for _, s := range stripesUsed {
		if pt.busy[s/64].Load()&(1<<(s%64)) == 0 {
			t.Errorf("stripe %d holds entries, its busy bit is clear", s)
		}
		for k := range 4 {
			w, ok := pt.lookup(hashOf(s, k))
			if want := k < 3; ok != want || (ok && (entryLoc(w) != uint32(s*10+k) || entryDead(w) != (k == 2))) {
				t.Errorf("stripe %d key %d: lookup = %#x, %v", s, k, w, ok)
			}
		}
	}
	if _, ok := pt.lookup(hashOf(2, 0)); ok || pt.busy[0].Load()&(1<<2) != 0 {
		t.Errorf("stripe 2 holds nothing: lookup found an entry or its bit is set")
	}
	for _, s := range stripesUsed {
		for k := range 3 {
			if k == 1 && pt.remove(hashOf(s, k), pendingEntry(999, false)) {
				t.Errorf("stripe %d: remove of another write's entry succeeded", s)
			}
			if !pt.remove(hashOf(s, k), pendingEntry(uint32(s*10+k), k == 2)) {
				t.Fatalf("stripe %d: remove %d failed", s, k)
			}
			if bit := pt.busy[s/64].Load()&(1<<(s%64)) != 0; bit != (k < 2) {
				t.Errorf("stripe %d after removing %d of 3 entries: busy bit %v", s, k+1, bit)
			}
		}
	}
	for i := range pt.busy {
		if w := pt.busy[i].Load(); w != 0 {
			t.Errorf("busy word %d = %#x with the table empty", i, w)
		}
	}
	if n := pt.size(); n != 0 {
		t.Errorf("size %d, want 0", n)
	}
}
