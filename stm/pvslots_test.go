package stm

import "testing"

// TestPVSlotsFitTheBlock checks the pre-validation table's size for each
// client block: a power of two, at least 64 slots a warp, 512 for the
// default one-warp block, and every warp's table together within
// pvTableBytes (the kernel's static shared memory).
func TestPVSlotsFitTheBlock(t *testing.T) {
	for _, tc := range []struct{ block, want int }{
		{32, 512}, {64, 512}, {128, 512}, {256, 256}, {512, 128}, {1024, 64},
	} {
		got := pvSlots(tc.block)
		if got != tc.want {
			t.Errorf("pvSlots(%d) = %d, want %d", tc.block, got, tc.want)
		}
		if got&(got-1) != 0 || got < 64 {
			t.Errorf("pvSlots(%d) = %d: want a power of two of at least 64", tc.block, got)
		}
		if bytes := got * 8 * (tc.block / 32); bytes > pvTableBytes {
			t.Errorf("block of %d threads: tables of %d bytes, more than %d", tc.block, bytes, pvTableBytes)
		}
	}
	if def := pvSlots(defaultClientBlock); def != 512 {
		t.Errorf("default client block: %d slots, want 512", def)
	}
}

// TestSetMirrorFitsTheBlock checks the set mirror's entries for each
// client block: 4 up to 256 threads, at least 1, and the block's mirror
// (16 bytes an entry: a read item, a write item, a written value) within
// setMirrorBytes.
func TestSetMirrorFitsTheBlock(t *testing.T) {
	for _, tc := range []struct{ block, want int }{
		{32, 4}, {256, 4}, {512, 2}, {1024, 1},
	} {
		got := setMirror(tc.block)
		if got != tc.want {
			t.Errorf("setMirror(%d) = %d, want %d", tc.block, got, tc.want)
		}
		if bytes := got * 16 * tc.block; bytes > setMirrorBytes {
			t.Errorf("block of %d threads: a mirror of %d bytes, more than %d", tc.block, bytes, setMirrorBytes)
		}
	}
}
