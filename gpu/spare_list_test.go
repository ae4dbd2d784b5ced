package gpu

import (
	"slices"
	"testing"
)

// TestSpareListChoosesBySize runs the spare list's bookkeeping without a
// device (no chunk is released): chunks kept in any order stay sorted by
// size; a take gets the smallest chunk that holds the growth when it is
// at most twice the growth and fits the room, else the largest chunks no
// larger than what is still needed; the limit refuses a chunk past it.
func TestSpareListChoosesBySize(t *testing.T) {
	d := &Device{}
	d.spareLimit, d.spareLimitSet = 100, true
	sizes := func() []int64 {
		var s []int64
		for _, c := range d.spare {
			s = append(s, c.size)
		}
		return s
	}
	for i, size := range []int64{5, 2, 9, 3, 2} {
		if !d.keepSpare(spareChunk{h: uint64(i + 1), size: size}) {
			t.Fatalf("chunk of %d refused under a limit of 100", size)
		}
	}
	if got, want := sizes(), []int64{2, 2, 3, 5, 9}; !slices.Equal(got, want) {
		t.Fatalf("spare sizes %v, want %v", got, want)
	}
	if d.keepSpare(spareChunk{h: 9, size: 80}) {
		t.Fatal("a chunk past the limit (21 + 80 > 100) was kept")
	}
	for _, c := range []struct {
		need, room int64
		took       []int64
		left       []int64
	}{
		{need: 4, room: 64, took: []int64{5}, left: []int64{2, 2, 3, 9}}, // smallest that holds 4
		{need: 4, room: 64, took: []int64{3}, left: []int64{2, 2, 9}},    // 9 > 2x4: largest that fit, 3 then nothing of 1
		{need: 7, room: 8, took: []int64{2, 2}, left: []int64{9}},        // 9 holds 7 but passes the room
		{need: 9, room: 64, took: []int64{9}, left: nil},
		{need: 1, room: 64, took: nil, left: nil},
	} {
		var took []int64
		for _, ch := range d.takeSpare(c.need, c.room) {
			took = append(took, ch.size)
		}
		if !slices.Equal(took, c.took) || !slices.Equal(sizes(), c.left) {
			t.Fatalf("take %d (room %d): took %v leaving %v, want %v leaving %v", c.need, c.room, took, sizes(), c.took, c.left)
		}
		var sum int64
		for _, s := range sizes() {
			sum += s
		}
		if d.SpareBytes() != sum {
			t.Fatalf("SpareBytes %d, the list holds %d", d.SpareBytes(), sum)
		}
	}
}
