package stm

import "testing"

// TestPVSlotsFitTheBlock checks the pre-validation table's size for each
// client block and write set: a power of two, at least 64 slots a warp,
// 512 for the default one-warp block up to 8 writes, room for the warp's
// write items twice over (64 slots a write) while the block's tables fit
// pvTableMaxBytes, and every warp's table together within pvTableBytes up
// to 8 writes and pvTableMaxBytes above, with the set mirror within
// pvSmemBytes (the kernel's static shared memory).
func TestPVSlotsFitTheBlock(t *testing.T) {
	for _, tc := range []struct{ block, writes, want int }{
		{32, 2, 512}, {64, 4, 512}, {128, 8, 512}, {256, 2, 256}, {512, 2, 128}, {1024, 8, 64},
		{32, 16, 1024}, {32, 32, 2048}, {32, 64, 4096}, {32, 1024, 4096},
		{128, 16, 1024}, {128, 64, 1024}, {256, 64, 256}, {1024, 64, 64},
	} {
		got := pvSlots(tc.block, tc.writes)
		if got != tc.want {
			t.Errorf("pvSlots(%d, %d) = %d, want %d", tc.block, tc.writes, got, tc.want)
		}
		if got&(got-1) != 0 || got < 64 {
			t.Errorf("pvSlots(%d, %d) = %d: want a power of two of at least 64", tc.block, tc.writes, got)
		}
		limit := pvTableBytes
		if tc.writes > 8 {
			limit = pvTableMaxBytes
		}
		if bytes := got * 8 * (tc.block / 32); bytes > limit {
			t.Errorf("block of %d threads, %d writes: tables of %d bytes, more than %d", tc.block, tc.writes, bytes, limit)
		}
		if bytes := got*8*(tc.block/32) + setMirror(tc.block)*16*tc.block; tc.writes > 8 && bytes > pvSmemBytes {
			t.Errorf("block of %d threads, %d writes: tables and set mirror of %d bytes, more than %d", tc.block, tc.writes, bytes, pvSmemBytes)
		}
	}
	if def := pvSlots(defaultClientBlock, ChainAutoWrites); def != 512 {
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
