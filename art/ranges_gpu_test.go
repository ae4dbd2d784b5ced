package art

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPURangeForms answers bounded range and prefix queries (ascending,
// descending, limits below, at and above a warp's 32 lanes) on the GPU
// engine with both single-walk forms, rangesCands (the default; its walk
// the default tile or aq_cands, rangeForms) and rangesSlots
// (collectRanges), each in the batch order and sorted by start key, and
// compares every query's pairs with the CPU engine's. Keys of 0 to 40
// bytes over a small alphabet (prefixes of each other, shared paths) and
// some of up to 300 bytes (arena keys).
func TestGPURangeForms(t *testing.T) {
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(22, 7))
	gt, ct := openTwins(t, dev)
	alpha := []byte("abcdefgh\x00\xff")
	n := 30000
	keys, vals := make([][]byte, n), make([]uint64, n)
	for i := range keys {
		keys[i], vals[i] = randomBytes(r, 0, 40, alpha), r.Uint64()
		if i%50 == 0 {
			keys[i] = randomBytes(r, 33, 300, alpha)
		}
	}
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Build(keys, vals); err != nil {
			t.Fatal(err)
		}
	}
	Q := querySortMin + 500
	qs, prefixes := make([]Query, Q), make([][]byte, Q)
	for i := range qs {
		lo := randomBytes(r, 0, 12, alpha)
		var hi []byte
		switch i % 5 {
		case 0:
			hi = append(append([]byte{}, lo...), 0xff, 0xff)
		case 1:
			hi = randomBytes(r, 0, 12, alpha)
		case 2:
			hi = nil // no upper bound
		case 3:
			hi = append(append([]byte{}, lo...), 'c')
		default:
			lo = nil // no lower bound
		}
		qs[i] = Query{Lo: lo, Hi: hi}
		prefixes[i] = randomBytes(r, 0, 4, alpha)
	}
	g := gt.eng.(*gpuEngine)
	defer func(s, c bool, w int) { g.sortQueries, g.collectRanges, g.walkLanes = s, c, w }(g.sortQueries, g.collectRanges, g.walkLanes)
	ops := []struct {
		name string
		f    func(tr *Tree, qs []Query, ps [][]byte, limit int) (*Result, error)
	}{
		{"ranges", func(tr *Tree, qs []Query, _ [][]byte, limit int) (*Result, error) { return tr.Ranges(qs, limit) }},
		{"rangesDesc", func(tr *Tree, qs []Query, _ [][]byte, limit int) (*Result, error) { return tr.RangesDesc(qs, limit) }},
		{"prefix", func(tr *Tree, _ []Query, ps [][]byte, limit int) (*Result, error) { return tr.Prefix(ps, limit) }},
	}
	for _, limit := range []int{1, 16, 32, 77} {
		for _, op := range ops {
			for _, size := range []int{7, Q} { // below and above querySortMin
				want, err := op.f(ct, qs[:size], prefixes[:size], limit)
				if err != nil {
					t.Fatal(err)
				}
				for _, form := range rangeForms() {
					g.collectRanges, g.sortQueries, g.walkLanes = form.collect, form.sorted, form.lanes
					name := fmt.Sprintf("%s, limit %d, %d queries, %s", op.name, limit, size, form.name)
					got, err := op.f(gt, qs[:size], prefixes[:size], limit)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if q := firstQueryDiff(got, want); q >= 0 {
						gp, wp := resultPairs(got), resultPairs(want)
						t.Fatalf("%s, query %d %q: %d pairs %.3q, want %d %.3q", name, q, qs[q], len(gp[q]), gp[q], len(wp[q]), wp[q])
					}
				}
			}
		}
	}
}

// rangeForm is a form of the GPU engine's bounded range queries: the walk
// of rangesCands with lanes per query (walkKernel), or rangesSlots
// (collect), in the batch order or sorted by start key.
type rangeForm struct {
	name            string
	collect, sorted bool
	lanes           int
}

// rangeForms are the forms of bounded range queries TestGPURangeForms
// compares: rangesCands with the default walk and with aq_cands (1 lane)
// and rangesSlots, each in the batch order and sorted by start key.
func rangeForms() []rangeForm {
	var fs []rangeForm
	for _, sorted := range []bool{false, true} {
		for _, lanes := range []int{defaultWalkLanes, 1} {
			fs = append(fs, rangeForm{fmt.Sprintf("cands, %d lanes, sorted %v", lanes, sorted), false, sorted, lanes})
		}
		fs = append(fs, rangeForm{fmt.Sprintf("collect, sorted %v", sorted), true, sorted, defaultWalkLanes})
	}
	return fs
}

// walkForms are the walks of rangesCands TestGPUWalkLanes compares: every
// one in the batch order, those of 1 and 16 lanes sorted by start key.
func walkForms() []rangeForm {
	var fs []rangeForm
	for _, f := range []struct {
		sorted bool
		lanes  []int
	}{{false, []int{1, 8, 16, 32}}, {true, []int{1, 16}}} {
		for _, lanes := range f.lanes {
			fs = append(fs, rangeForm{fmt.Sprintf("cands, %d lanes, sorted %v", lanes, f.sorted), false, f.sorted, lanes})
		}
	}
	return fs
}

// TestGPURangesOneKeyLength answers ranges (ascending, descending, with
// and without a limit) and prefix scans on a tree of 16-byte keys with a
// few 8-byte keys at its top end (first byte 0xff): batches whose every
// answer key has 16 bytes (the host writes the key offsets, sameKeyLen)
// and batches that reach the 8-byte keys (offsets downloaded), each into
// a new Result, a reused Go-memory Result and a pinned one, and compares
// every array of each answer with the CPU engine's.
func TestGPURangesOneKeyLength(t *testing.T) {
	dev := gputest.Device(t)
	gt, ct := openTwins(t, dev)
	r := rand.New(rand.NewPCG(16, 8))
	keys, vals := make([][]byte, 0, 20200), make([]uint64, 0, 20200)
	for range 20000 {
		k := randomBytes(r, 16, 16, nil)
		k[0] %= 0xff
		keys, vals = append(keys, k), append(vals, r.Uint64())
	}
	for range 200 {
		k := randomBytes(r, 8, 8, nil)
		k[0] = 0xff
		keys, vals = append(keys, k), append(vals, r.Uint64())
	}
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Build(keys, vals); err != nil {
			t.Fatal(err)
		}
	}
	below := []byte{0xff} // the prefix of the 8-byte keys alone
	batch := func(n int, mixed bool) ([]Query, [][]byte) {
		qs, ps := make([]Query, n), make([][]byte, n)
		for i := range qs {
			lo := keys[r.IntN(20000)]
			qs[i] = Query{Lo: lo, Hi: prefixEnd(lo[:1])} // 16-byte keys alone, ~40 of them
			ps[i] = lo[:1+r.IntN(2)]
			if mixed && i%7 == 0 {
				qs[i] = Query{Lo: []byte{0xfe, 0xff}} // no upper bound: the top 16-byte keys, then the 8-byte ones
				ps[i] = below
			}
		}
		return qs, ps
	}
	same := func(name string, got, want *Result) {
		t.Helper()
		if len(got.Offsets) != len(want.Offsets) || len(got.Values) != len(want.Values) {
			t.Fatalf("%s: %d queries, %d pairs, want %d, %d", name, len(got.Offsets)-1, len(got.Values), len(want.Offsets)-1, len(want.Values))
		}
		if q := firstQueryDiff(got, want); q >= 0 {
			gp, wp := resultPairs(got), resultPairs(want)
			t.Fatalf("%s: query %d: pairs %.3q, want %.3q", name, q, gp[q], wp[q])
		}
		if n := len(got.Values); got.Keys.Offs[0] != 0 || int(got.Keys.Offs[n]) != len(got.Keys.Data) {
			t.Fatalf("%s: key offsets from %d to %d for %d key bytes", name, got.Keys.Offs[0], got.Keys.Offs[n], len(got.Keys.Data))
		}
	}
	ops := intoOps()
	pinned, reused := gt.NewResult(), &Result{}
	defer pinned.Free()
	for _, mixed := range []bool{false, true} {
		for _, n := range []int{1, 300, querySortMin + 100} {
			qs, ps := batch(n, mixed)
			for _, limit := range []int{16, 40, 0} {
				for _, op := range ops {
					if limit == 0 && op.name == "prefix" {
						continue
					}
					want, err := op.f(ct, nil, qs, ps, limit)
					if err != nil {
						t.Fatal(err)
					}
					for _, form := range []struct {
						name string
						into *Result
					}{{"new", nil}, {"reused", reused}, {"pinned", pinned}} {
						name := fmt.Sprintf("%s, limit %d, %d queries, mixed %v, %s Result", op.name, limit, n, mixed, form.name)
						got, err := op.f(gt, form.into, qs, ps, limit)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						same(name, got, want)
					}
				}
			}
		}
	}
}

// intoOp is a batch call of the range tests answering into a Result:
// ranges (qs), descending ranges (qs) or prefix scans (ps).
type intoOp struct {
	name string
	f    func(tr *Tree, into *Result, qs []Query, ps [][]byte, limit int) (*Result, error)
}

// intoOps are RangesInto, RangesDescInto and PrefixInto.
func intoOps() []intoOp {
	return []intoOp{
		{"ranges", func(tr *Tree, into *Result, qs []Query, _ [][]byte, limit int) (*Result, error) {
			return tr.RangesInto(into, qs, limit)
		}},
		{"rangesDesc", func(tr *Tree, into *Result, qs []Query, _ [][]byte, limit int) (*Result, error) {
			return tr.RangesDescInto(into, qs, limit)
		}},
		{"prefix", func(tr *Tree, into *Result, _ []Query, ps [][]byte, limit int) (*Result, error) {
			return tr.PrefixInto(into, ps, limit)
		}},
	}
}
