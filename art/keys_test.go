package art

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// checkSequential is the plain check scanOffsets and firstBad stand for:
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
	for _, minPer := range []int{prefixQueryMin, 7} { // one part; parts of 7 prefixes and more
		checkPrefixQueries(t, prefixes, prefixQueriesBy(prefixes, minPer))
	}
}

// checkPrefixQueries checks prefixQueries' answer qs for prefixes.
func checkPrefixQueries(t *testing.T, prefixes [][]byte, qs []Query) {
	t.Helper()
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

// TestQueryPackMatchesTheBatches packs random queries (nil, empty and
// long bounds; half of them of 8 or 16 bytes, which putBound copies as
// words) as the GPU engine uploads them and reads every array back
// against the queries.
func TestQueryPackMatchesTheBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	size := func() int {
		if rng.IntN(2) == 0 {
			return 8 << rng.IntN(2)
		}
		return rng.IntN(40)
	}
	for _, n := range []int{1, 7, queryPackMin - 1, 3*queryPackMin + 5} {
		qs := make([]Query, n)
		for i := range qs {
			qs[i].Lo = make([]byte, size())
			if rng.IntN(3) > 0 {
				qs[i].Hi = make([]byte, size())
			}
			for _, b := range [][]byte{qs[i].Lo, qs[i].Hi} {
				for j := range b {
					b[j] = byte(rng.Uint32())
				}
			}
		}
		for _, workers := range []int{1, 3} {
			p, err := planQueries(qs, workers)
			if err != nil {
				t.Fatal(err)
			}
			buf := alignedBytes(p.l.end)
			if !p.fill(buf, qs) {
				t.Fatalf("%d queries, %d workers: a sized plan's fill failed", n, workers)
			}
			checkPacked(t, fmt.Sprintf("%d queries, %d workers", n, workers), p, buf, qs)
			pp, pbuf, err := packQueries(qs, workers, func(n int) ([]byte, error) { return alignedBytes(n), nil })
			if err != nil {
				t.Fatal(err)
			}
			checkPacked(t, fmt.Sprintf("%d queries, %d workers, packQueries", n, workers), pp, pbuf, qs)
		}
	}
}

// alignedBytes returns n zero bytes, 8-byte aligned.
func alignedBytes(n int) []byte {
	h := make([]uint64, (n+7)/8+1)
	return unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), n)
}

// checkPacked reads every array of a packed batch buf of plan p back
// against the queries qs.
func checkPacked(t *testing.T, name string, p queryPack, buf []byte, qs []Query) {
	t.Helper()
	n, l := len(qs), p.l
	loOffs, hiOffs := u32View(buf[:l.hiOffs], n+1), u32View(buf[l.hiOffs:l.has], n+1)
	for i, q := range qs {
		lo := buf[l.loData+int(loOffs[i]) : l.loData+int(loOffs[i+1])]
		hi := buf[l.hiData+int(hiOffs[i]) : l.hiData+int(hiOffs[i+1])]
		if !bytes.Equal(lo, q.Lo) || !bytes.Equal(hi, q.Hi) || (buf[l.has+i] == 1) != (q.Hi != nil) {
			t.Fatalf("%s: query %d packs as [%x, %x) has %d, want [%x, %x)", name, i, lo, hi, buf[l.has+i], q.Lo, q.Hi)
		}
	}
	if end := l.loData + int(loOffs[n]); end > l.hiData {
		t.Fatalf("%s: lower bounds end at %d, past their array's end %d", name, end, l.hiData)
	}
}

// TestPackQueriesOnePass packs batches whose bounds all have one length
// per side (16-byte lower bounds; no upper bounds, or 16-byte or empty
// ones), which packQueries packs in one pass, and the same batches with
// one query of other lengths at the first, a middle and the last
// position, which make it size the batch first; every packed array must
// match the queries.
func TestPackQueriesOnePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	key := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for _, n := range []int{1, 5, 3*queryPackMin + 5} {
		for _, hiLen := range []int{-1, 0, 16} { // -1: no upper bounds
			qs := make([]Query, n)
			for i := range qs {
				qs[i].Lo = key(16)
				if hiLen >= 0 {
					qs[i].Hi = key(hiLen)
				}
			}
			for _, odd := range []int{-1, 0, n / 2, n - 1} {
				q := slices.Clone(qs)
				if odd >= 0 {
					q[odd] = Query{Lo: key(9), Hi: key(3)}
				}
				name := fmt.Sprintf("%d queries, upper bounds of %d bytes, other lengths at %d", n, hiLen, odd)
				one := odd < 0 || n == 1 // a batch of one query has one length per side
				if sp, ok := sameQueries(q, 3); !ok || sp.fill(alignedBytes(sp.l.end), q) != one {
					t.Fatalf("%s: the one-pass fill reports the batch wrongly", name)
				}
				for _, workers := range []int{1, 3} {
					p, buf, err := packQueries(q, workers, func(n int) ([]byte, error) { return alignedBytes(n), nil })
					if err != nil {
						t.Fatal(err)
					}
					if p.same != one {
						t.Fatalf("%s: packed in one pass %v", name, p.same)
					}
					checkPacked(t, name, p, buf, q)
				}
			}
		}
	}
}

// BenchmarkPackQueries packs 64Ki queries with 16-byte lower bounds and
// no upper bound, as the GPU engine packs a batch of ranges into pinned
// memory (here ordinary memory).
func BenchmarkPackQueries(b *testing.B) {
	const n = 1 << 16
	qs := make([]Query, n)
	for i := range qs {
		qs[i].Lo = make([]byte, 16)
		binary.BigEndian.PutUint64(qs[i].Lo, uint64(i)*0x9e3779b97f4a7c15)
	}
	p, _ := planQueries(qs, 0)
	buf := make([]byte, p.l.end+8)
	for b.Loop() {
		p, _ := planQueries(qs, 0)
		p.fill(buf, qs)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mqueries/s")
}

// TestScanOffsetsLearnsOneLength scans batches of one length, of one
// length but for one key, starting past byte 0, and bad ones, over one
// part and several: scanOffsets must say ok exactly when the sequential
// check passes (the data long enough), and one, with the length,
// exactly when oneLength does.
func TestScanOffsetsLearnsOneLength(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for trial := range 80 {
		n := 1 + r.IntN(3*checkMinPart)
		l := uint32(r.IntN(40))
		offs := make([]uint32, n+1)
		offs[0] = uint32(r.IntN(2)) * 7
		for i := range n {
			offs[i+1] = offs[i] + l
		}
		i := 1 + r.IntN(n)
		switch trial % 4 {
		case 1: // one key longer
			for j := i; j <= n; j++ {
				offs[j]++
			}
		case 2: // a key ends before it starts
			offs[i] = offs[i-1] - 1
		case 3: // a key too long
			for j := i; j <= n; j++ {
				offs[j] += MaxKeyLen
			}
		}
		kb := Keys{Data: make([]byte, max(offs[n], offs[0])), Offs: offs}
		sc := scanOffsets(offs, 0)
		if want := kb.firstBad("test") == nil; sc.ok != want {
			t.Fatalf("trial %d (%d keys): ok %v, the sequential check %v", trial, n, sc.ok, want)
		}
		wl, wone := oneLength(offs)
		if sc.one != wone || wone && sc.l != wl {
			t.Fatalf("trial %d (%d keys of %d bytes): one %v of %d, oneLength %v of %d", trial, n, l, sc.one, sc.l, wone, wl)
		}
	}
}

// TestKeysLengthHint gives the GPU engine's keysLength a hint and asks
// for the hinted batch, another batch of the same offsets' count, and a
// slice of the hinted offsets: only the first takes the hint (the hint
// says one length, the offsets another), the others read their offsets.
func TestKeysLengthHint(t *testing.T) {
	kb := Keys{Data: make([]byte, 64), Offs: []uint32{0, 8, 16, 24, 32}}
	g := &gpuEngine{}
	g.hint = newLengthHint(kb, offsetsScan{ok: true, one: true, l: 5})
	other := Keys{Data: kb.Data, Offs: slices.Clone(kb.Offs)}
	for _, c := range []struct {
		name string
		kb   Keys
		l    uint32
		one  bool
	}{
		{"the hinted batch", kb, 5, true},
		{"another batch", other, 8, true},
		{"a slice of the hinted offsets", Keys{Data: kb.Data, Offs: kb.Offs[:3]}, 8, true},
		{"no offsets", Keys{}, 0, false},
	} {
		if l, one := g.keysLength(c.kb); l != c.l || one != c.one {
			t.Errorf("%s: (%d, %v), want (%d, %v)", c.name, l, one, c.l, c.one)
		}
	}
}
