package reuse

import "testing"

// TestResizeReusesAndGrowsGeometrically checks that Resize keeps the
// array while it fits, doubles the capacity when it does not, and always
// returns n elements that *s also holds.
func TestResizeReusesAndGrowsGeometrically(t *testing.T) {
	var s []int
	steps := []struct{ n, wantCap int }{{3, 3}, {2, 3}, {5, 6}, {6, 6}, {40, 40}, {41, 80}, {0, 80}}
	for _, st := range steps {
		before := s
		got := Resize(&s, st.n)
		if len(got) != st.n || len(s) != st.n || cap(s) != st.wantCap {
			t.Fatalf("Resize to %d: len %d (s %d), cap %d, want cap %d", st.n, len(got), len(s), cap(s), st.wantCap)
		}
		if st.n > 0 && cap(before) >= st.n && &got[0] != &before[:1][0] {
			t.Fatalf("Resize to %d moved an array that fitted", st.n)
		}
	}
}
