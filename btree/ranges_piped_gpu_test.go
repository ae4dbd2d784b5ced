package btree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPURangesPiped answers batches into one pinned Result with the
// pipelined call (rangesPiped, chunks of 500 queries, chunk 0 of 125), in
// both directions, and compares them with the CPU engine's: batches whose first chunks answer
// nothing and whose later chunks answer many pairs (the Result's arrays
// grown in the middle of a call, keeping the chunks placed before), a
// smaller batch after them (the arrays reused), a larger one again, and
// limits of none, 1 and 50.
func TestGPURangesPiped(t *testing.T) {
	d := gputest.Device(t)
	r := rand.New(rand.NewPCG(5, 22))
	n := 20000
	keys, vals := make([]uint64, n), make([]uint64, n)
	for i := range keys {
		keys[i], vals[i] = r.Uint64N(1<<30), r.Uint64()
	}
	c, g := builtPair(t, Options{}, d, keys, vals)
	gt := g.e.(*gpuTree)
	gt.rangeChunkSize = 500
	defer func() { gt.rangeChunkSize = 0 }()
	// batch returns q queries, the first empty of them answering nothing,
	// the others about span/2^30*n pairs each.
	batch := func(q, empty int, span uint64) ([]uint64, []uint64) {
		los, his := make([]uint64, q), make([]uint64, q)
		for i := range los {
			los[i] = r.Uint64N(1 << 30)
			his[i] = los[i] + span
			if i < empty {
				his[i] = los[i]
			}
		}
		return los, his
	}
	pr := g.NewResult()
	defer pr.Free()
	for _, b := range []struct {
		q, empty int
		span     uint64
	}{{3000, 1000, 1 << 23}, {700, 0, 1 << 20}, {4100, 600, 1 << 24}, {10, 3, 1 << 22}} {
		los, his := batch(b.q, b.empty, b.span)
		for _, dir := range rangeDirs() {
			for _, limit := range []int{0, 1, 50} {
				name := fmt.Sprintf("%d queries (%d empty), span %d, %s, limit %d", b.q, b.empty, b.span, dir.name, limit)
				want, err := dir.into(c, nil, los, his, limit)
				if err != nil {
					t.Fatal(err)
				}
				got, err := dir.into(g, pr, los, his, limit)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !slices.Equal(got.Keys, want.Keys) || !slices.Equal(got.Values, want.Values) || !slices.Equal(got.Offsets, want.Offsets) {
					t.Fatalf("%s: %d pairs, want %d (offsets equal %v)", name, len(got.Keys), len(want.Keys), slices.Equal(got.Offsets, want.Offsets))
				}
			}
		}
	}
}

// TestPipedChunks checks the chunks of a pipelined call: contiguous,
// covering every query once, chunk 0 a quarter of the size when the batch
// is larger, the others at most the size.
func TestPipedChunks(t *testing.T) {
	for _, c := range []struct{ q, size, first int }{{0, 8, 0}, {1, 8, 1}, {2, 8, 2}, {3, 8, 2}, {10, 8, 2}, {1000, 256, 64}, {64, 256, 64}, {65, 256, 64}} {
		ch := pipedChunks(c.q, c.size)
		if ch[0].lo != 0 || ch[len(ch)-1].hi != c.q || ch[0].n() != c.first {
			t.Fatalf("%d queries, size %d: chunks %v: want 0 to %d, chunk 0 of %d", c.q, c.size, ch, c.q, c.first)
		}
		for i := 1; i < len(ch); i++ {
			if ch[i].lo != ch[i-1].hi || ch[i].n() < 1 || ch[i].n() > c.size {
				t.Fatalf("%d queries, size %d: chunks %v", c.q, c.size, ch)
			}
		}
	}
}
