package art

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkSequential is the plain check offsetsOK and firstBad stand for:
// the first bad key in order, or nil.
func checkSequential(k Keys, op string) error { return k.firstBad(op) }

// TestCheckFindsTheFirstBadKey corrupts random batches (offsets that go
// down, run past the data, or make a key longer than MaxKeyLen) and
// compares the parallel check's error with the sequential one's, on
// batches large enough to split over several parts.
func TestCheckFindsTheFirstBadKey(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 60 {
		n := 1 + r.IntN(3*checkMinPart)
		kb := Keys{Offs: make([]uint32, n+1)}
		for i := range n {
			kb.Offs[i+1] = kb.Offs[i] + uint32(r.IntN(20))
		}
		kb.Data = make([]byte, kb.Offs[n]+uint32(r.IntN(3)))
		for range r.IntN(3) {
			i := 1 + r.IntN(n)
			switch r.IntN(3) {
			case 0:
				kb.Offs[i] = kb.Offs[i-1] - 1 - uint32(r.IntN(5))
			case 1:
				kb.Offs[i] = uint32(len(kb.Data)) + 1 + uint32(r.IntN(5))
			case 2:
				kb.Offs[i] = kb.Offs[i-1] + MaxKeyLen + 1
			}
		}
		want, got := checkSequential(kb, "test"), kb.check("test", nil, false)
		if (want == nil) != (got == nil) || (want != nil && want.Error() != got.Error()) {
			t.Fatalf("trial %d (%d keys): check says %v, a sequential check %v", trial, n, got, want)
		}
	}
}

// BenchmarkCheck measures the batch check of 1Mi 16-byte keys (done on
// every call before anything else).
func BenchmarkCheck(b *testing.B) {
	kb, _, _ := benchKeys(1<<20, 16)
	b.SetBytes(int64(len(kb.Offs) * 4))
	for b.Loop() {
		if err := kb.check("lookup", nil, false); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPackMatchesAppend packs batches large enough to split over several
// goroutines and compares with packing by appends, for byte and string
// keys (empty keys and an empty batch included).
func TestPackMatchesAppend(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 5, 3*packMinPart + 17} {
		keys := make([][]byte, n)
		strs := make([]string, n)
		want := Keys{Offs: []uint32{0}}
		for i := range keys {
			keys[i] = randomBytes(r, 0, 12, nil)
			strs[i] = string(keys[i])
			want.Data = append(want.Data, keys[i]...)
			want.Offs = append(want.Offs, uint32(len(want.Data)))
		}
		for name, got := range map[string]Keys{"bytes": Pack(keys), "strings": PackStrings(strs)} {
			if !bytes.Equal(got.Data, want.Data) || !slices.Equal(got.Offs, want.Offs) {
				t.Fatalf("%s, %d keys: packed differently", name, n)
			}
		}
	}
}
