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

// TestPrefixQueriesMatchPrefixEnd compares the batch form of the prefix
// scans' bounds with prefixEnd, prefix by prefix, on prefixes that end in
// runs of 0xff (no upper bound when all of it is 0xff), empty and nil.
func TestPrefixQueriesMatchPrefixEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	prefixes := [][]byte{nil, {}, {0xff}, {0xff, 0xff}, {1, 0xff}, {0, 0xfe, 0xff}, {0x7f}}
	for range 500 {
		p := make([]byte, rng.IntN(6))
		for i := range p {
			p[i] = []byte{0, 1, 0xfe, 0xff, byte(rng.Uint32())}[rng.IntN(5)]
		}
		prefixes = append(prefixes, p)
	}
	qs := prefixQueries(prefixes)
	for i, p := range prefixes {
		want := prefixEnd(p)
		if !bytes.Equal(qs[i].Lo, p) || (qs[i].Hi == nil) != (want == nil) || !bytes.Equal(qs[i].Hi, want) {
			t.Fatalf("prefix %x: query [%x, %x), want [%x, %x)", p, qs[i].Lo, qs[i].Hi, p, want)
		}
		if qs[i].Lo == nil {
			t.Fatalf("prefix %x: nil lower bound", p)
		}
	}
	// The bounds do not share bytes: appending to one leaves the next.
	if len(qs) > 8 && qs[5].Hi != nil && cap(qs[5].Hi) != len(qs[5].Hi) {
		t.Fatalf("upper bound's capacity %d past its %d bytes", cap(qs[5].Hi), len(qs[5].Hi))
	}
}
