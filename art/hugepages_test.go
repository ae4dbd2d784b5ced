package art

import "testing"

// TestAdviseHuge checks that advising huge pages for slices of every
// size, within one huge page or over several, keeps their contents.
func TestAdviseHuge(t *testing.T) {
	for _, n := range []int{0, 1, 100, 1 << 16, 1 << 18, 1<<20 + 3} {
		s := make([]uint64, n)
		for i := range s {
			s[i] = uint64(i) * 3
		}
		adviseHuge(s)
		for i := range s {
			if s[i] != uint64(i)*3 {
				t.Fatalf("n=%d: element %d changed to %d", n, i, s[i])
			}
		}
		f := make([]bool, n)
		adviseHuge(f)
		touchPages(f)
		for i, v := range f {
			if v {
				t.Fatalf("n=%d: flag %d set", n, i)
			}
		}
	}
}
