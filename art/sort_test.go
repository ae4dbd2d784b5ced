package art

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedOrderMatchesStableSort checks the parallel sort (runs sorted
// on their own, merged in pairs, an odd run carried over) against one
// stable sort, for worker counts that give even and odd numbers of runs,
// on keys with many duplicates.
func TestSortedOrderMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 5*sortGrain + 123
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = randomBytes(r, 0, 3, []byte("ab\x00"))
	}
	kb := Pack(keys)
	want := make([]uint32, n)
	for i := range want {
		want[i] = uint32(i)
	}
	slices.SortStableFunc(want, func(a, b uint32) int { return bytes.Compare(kb.At(int(a)), kb.At(int(b))) })
	for _, workers := range []int{1, 2, 3, 4, 5} {
		if got := sortedOrder(kb, workers); !slices.Equal(got, want) {
			t.Fatalf("%d workers: the order differs from a stable sort", workers)
		}
	}
}
