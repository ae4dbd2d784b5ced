package art

import (
	"strings"
	"testing"
)

// TestFirstLongBound checks the bound check of query batches below and
// above one worker's share: no long bound, one at the first, a middle and
// the last query (lower or upper), several (the first one counts), and a
// bound of exactly the longest length allowed; and the error Ranges
// returns for one.
func TestFirstLongBound(t *testing.T) {
	long, longest := make([]byte, MaxKeyLen+1), make([]byte, MaxKeyLen)
	for _, n := range []int{1, 100, 5*queryCheckMin + 3} {
		for _, bad := range [][]int{nil, {0}, {n / 2}, {n - 1}, {n - 1, n / 3, n / 2}} {
			for _, upper := range []bool{false, true} {
				qs := make([]Query, n)
				for i := range qs {
					qs[i] = Query{Lo: longest, Hi: longest}
				}
				want := -1
				for _, i := range bad {
					if upper {
						qs[i].Hi = append(long, 0) // MaxKeyLen+2 bytes
					} else {
						qs[i].Lo = long
					}
					if want < 0 || i < want {
						want = i
					}
				}
				if got := firstLongBound(qs); got != want {
					t.Fatalf("%d queries, long bounds at %v (upper %v): %d, want %d", n, bad, upper, got, want)
				}
			}
		}
	}
	tr, err := Open(Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	qs := make([]Query, 3*queryCheckMin)
	qs[2*queryCheckMin+5].Lo, qs[3*queryCheckMin-1].Lo = long, long
	if _, err := tr.Ranges(qs, 4); err == nil || !strings.Contains(err.Error(), "query 16389: bound of 65536 bytes") {
		t.Fatalf("Ranges with a long bound: %v", err)
	}
}
