package art

import (
	"math/rand/v2"
	"testing"
)

// TestSameKeyLen checks sameKeyLen against the lengths themselves: equal
// lengths (including empty keys and the longest) give the length, any
// other set -1, among them sets whose sums match an equal set's.
func TestSameKeyLen(t *testing.T) {
	sums := func(ls []int) (n, s1, s2 uint64) {
		for _, l := range ls {
			n, s1, s2 = n+1, s1+uint64(l), s2+uint64(l)*uint64(l)
		}
		return
	}
	cases := []struct {
		lens []int
		want int
	}{
		{nil, -1},
		{[]int{0}, 0},
		{[]int{16, 16, 16}, 16},
		{[]int{MaxKeyLen, MaxKeyLen}, MaxKeyLen},
		{[]int{15, 17}, -1},        // the sum of two 16s
		{[]int{8, 8, 32}, -1},      // the sum of three 16s
		{[]int{0, 16, 16, 32}, -1}, // the sum of four 16s
	}
	rng := rand.New(rand.NewPCG(5, 7))
	big := make([]int, 1<<16)
	for i := range big {
		big[i] = 16
	}
	cases = append(cases, struct {
		lens []int
		want int
	}{big, 16})
	odd := append([]int(nil), big...)
	odd[rng.IntN(len(odd))] = 17
	odd[rng.IntN(len(odd))] = 15
	cases = append(cases, struct {
		lens []int
		want int
	}{odd, -1})
	for _, c := range cases {
		n, s1, s2 := sums(c.lens)
		if got := sameKeyLen(n, s1, s2); got != c.want {
			t.Errorf("%d lengths (first %v): %d, want %d", len(c.lens), c.lens[:min(len(c.lens), 4)], got, c.want)
		}
	}
}

// TestFillKeyOffsets checks the key offsets the host writes for keys of
// one length, over sizes below and above one worker's part.
func TestFillKeyOffsets(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 3<<16 + 7} {
		for _, l := range []int{0, 8, 16, 300} {
			offs := make([]uint32, n)
			for i := range offs {
				offs[i] = 12345
			}
			fillKeyOffsets(offs, l)
			for i, o := range offs {
				if o != uint32(i*l) {
					t.Fatalf("%d keys of %d bytes: offset %d is %d", n, l, i, o)
				}
			}
		}
	}
}
