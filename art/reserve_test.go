package art

import "testing"

// TestLeafClassCounts counts keys by leaf class at the classes' bounds,
// in one part and in several.
func TestLeafClassCounts(t *testing.T) {
	lens := []int{0, 8, 9, 16, 17, 32, 33, 300}
	want := map[int]uint64{kindL8: 2, kindL16: 2, kindL32: 2, kindLV: 2}
	for _, reps := range []int{1, 50000} {
		var offs []uint32
		o := uint32(0)
		offs = append(offs, o)
		for range reps {
			for _, l := range lens {
				o += uint32(l)
				offs = append(offs, o)
			}
		}
		got := leafClassCounts(offs)
		for k := kindN4; k <= kindLV; k++ {
			if got[k] != want[k]*uint64(reps) {
				t.Errorf("%d keys: kind %d: %d, want %d", reps*len(lens), k, got[k], want[k]*uint64(reps))
			}
		}
	}
	if c := leafClassCounts([]uint32{0}); c != ([numKinds + 1]uint64{}) {
		t.Errorf("no keys: %v", c)
	}
}
