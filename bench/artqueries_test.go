package bench

import (
	"testing"

	"github.com/warpkv/warpkv/art"
)

// TestARTQueriesMadeOncePerBatch checks the ranges and prefix rows' query
// slices: made once for a batch and reused while the same batch comes
// again (the same slices), made again for other offsets over the same
// bytes and for another batch, and viewing the batch's bytes (a batch
// rewritten in place is seen).
func TestARTQueriesMadeOncePerBatch(t *testing.T) {
	b := art.Pack([][]byte{[]byte("ab"), []byte("cd"), []byte("ef")})
	var q artQueries
	qs, _ := q.of(b, true)
	if len(qs) != 3 || string(qs[1].Lo) != "cd" || qs[1].Hi != nil {
		t.Fatalf("ranges of %q: %q", b.Data, qs)
	}
	again, _ := q.of(b, true)
	if &again[0] != &qs[0] {
		t.Fatal("the same batch made its queries again")
	}
	b.Data[2] = 'x'
	if again, _ = q.of(b, true); string(again[1].Lo) != "xd" {
		t.Fatalf("a batch rewritten in place: %q", again[1].Lo)
	}
	other := art.Keys{Data: b.Data, Offs: []uint32{0, 3, 6}}
	if qs2, _ := q.of(other, true); len(qs2) != 2 || string(qs2[0].Lo) != "abx" {
		t.Fatalf("other offsets over the same bytes: %q", qs2)
	}
	_, ps := q.of(b, false)
	if len(ps) != 3 || string(ps[2]) != "ef" {
		t.Fatalf("prefixes of %q: %q", b.Data, ps)
	}
	if qs3, _ := q.of(art.Pack([][]byte{[]byte("zz")}), true); len(qs3) != 1 || string(qs3[0].Lo) != "zz" {
		t.Fatalf("another batch: %q", qs3)
	}
}
