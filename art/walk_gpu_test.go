package art

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUWalkLanes answers bounded ranges (ascending and descending, with
// and without either bound) and prefix scans, at limits from 1 to past a
// warp's lanes, with the walks of rangesCands (walkForms: a thread per
// query, aq_cands, and tiles of 8, 16 and 32 lanes, aq_walk8/16/32, in the
// batch order and some sorted by start key), on random trees whose nodes
// are of every kind: keys over all 256 bytes (N16 and N48 nodes), over 30
// bytes (N48), three first bytes then any (N256), short keys beside long
// arena keys with long shared prefixes (prefixes past the stored 8 bytes,
// terminators), and 16-byte random keys with a few 8-byte ones; it
// compares every query's pairs with the CPU engine's.
func TestGPUWalkLanes(t *testing.T) {
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(22, 32))
	all := allBytes()
	trees := []struct {
		name string
		key  func() []byte
	}{
		{"all bytes", func() []byte { return randomBytes(r, 0, 4, all) }},
		{"30 bytes", func() []byte { return randomBytes(r, 0, 10, all[100:130]) }},
		{"long and short", func() []byte {
			if r.IntN(3) == 0 {
				return randomBytes(r, 0, 3, []byte("ab\x00"))
			}
			k := append([]byte("shared-prefix-of-twenty"), randomBytes(r, 0, 60, []byte("xyz\xff"))...)
			return k[:r.IntN(len(k)+1)]
		}},
		{"dense", func() []byte { return append([]byte{"abc"[r.IntN(3)]}, randomBytes(r, 1, 2, all)...) }},
		{"16 bytes", func() []byte {
			if r.IntN(100) == 0 {
				return randomBytes(r, 8, 8, nil)
			}
			return randomBytes(r, 16, 16, nil)
		}},
	}
	for _, tc := range trees {
		n := 20000
		keys, vals := make([][]byte, n), make([]uint64, n)
		for i := range keys {
			keys[i], vals[i] = tc.key(), r.Uint64()
		}
		gt, err := Open(Options{GPU: dev})
		if err != nil {
			t.Fatal(err)
		}
		ct, _ := Open(Options{Device: "cpu"})
		for _, tr := range []*Tree{gt, ct} {
			if err := tr.Build(keys, vals); err != nil {
				t.Fatal(err)
			}
		}
		Q := querySortMin + 300
		qs, ps := make([]Query, Q), make([][]byte, Q)
		for i := range qs {
			lo, hi := keys[r.IntN(n)], keys[r.IntN(n)]
			switch i % 6 {
			case 0:
				lo, hi = nil, nil
			case 1:
				lo = nil
			case 2:
				hi = nil
			case 3:
				lo = tc.key() // a bound that may not be a key
			case 4:
				hi = append(slices.Clone(lo), 0xff)
			}
			qs[i] = Query{Lo: lo, Hi: hi}
			p := keys[r.IntN(n)]
			ps[i] = p[:r.IntN(min(len(p), 3)+1)]
		}
		ops := []struct {
			name string
			f    func(tr *Tree, limit int) (*Result, error)
		}{
			{"ranges", func(tr *Tree, limit int) (*Result, error) { return tr.Ranges(qs, limit) }},
			{"rangesDesc", func(tr *Tree, limit int) (*Result, error) { return tr.RangesDesc(qs, limit) }},
			{"prefix", func(tr *Tree, limit int) (*Result, error) { return tr.Prefix(ps, limit) }},
		}
		g := gt.eng.(*gpuEngine)
		for _, limit := range []int{1, 16, 33, 100} {
			for _, op := range ops {
				want, err := op.f(ct, limit)
				if err != nil {
					t.Fatal(err)
				}
				for _, form := range walkForms() {
					g.sortQueries, g.walkLanes = form.sorted, form.lanes
					name := fmt.Sprintf("%s: %s, limit %d, %s", tc.name, op.name, limit, form.name)
					got, err := op.f(gt, limit)
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
		gt.Close()
	}
}

// TestGPUWalkLanesOption checks that the walk refuses a lane count it
// has no kernel for (the call fails, and the next one with a valid count
// answers as the CPU engine).
func TestGPUWalkLanesOption(t *testing.T) {
	dev := gputest.Device(t)
	gt, ct := openTwins(t, dev)
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Build(keys, []uint64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	qs := []Query{{Lo: []byte("b")}}
	want, err := ct.Ranges(qs, 5)
	if err != nil {
		t.Fatal(err)
	}
	g := gt.eng.(*gpuEngine)
	defer func(w int) { g.walkLanes = w }(g.walkLanes)
	for _, lanes := range []int{4, 1, 8, 16, 32} {
		g.walkLanes = lanes
		got, err := gt.Ranges(qs, 5)
		if lanes == 4 {
			if err == nil {
				t.Fatal("walk lanes 4: no error")
			}
			continue
		}
		if err != nil {
			t.Fatalf("walk lanes %d: %v", lanes, err)
		}
		if q := firstQueryDiff(got, want); q >= 0 {
			t.Fatalf("walk lanes %d: %.3q, want %.3q", lanes, resultPairs(got), resultPairs(want))
		}
	}
}

// firstQueryDiff returns the first query whose pairs differ between two
// Results of as many queries, or -1 when every query's are equal. Cost:
// one pass over both Results' arrays, no allocation (the tests compare
// thousands of queries per call).
func firstQueryDiff(got, want *Result) int {
	if len(got.Offsets) != len(want.Offsets) {
		return 0
	}
	for q := range len(want.Offsets) - 1 {
		a, b := want.Offsets[q], want.Offsets[q+1]
		if got.Offsets[q] != a || got.Offsets[q+1] != b || !slices.Equal(got.Values[a:b], want.Values[a:b]) {
			return q
		}
		for i := a; i < b; i++ {
			if !bytes.Equal(got.Keys.Data[got.Keys.Offs[i]:got.Keys.Offs[i+1]], want.Keys.Data[want.Keys.Offs[i]:want.Keys.Offs[i+1]]) {
				return q
			}
		}
	}
	return -1
}

// TestFirstQueryDiff checks the tests' comparison of Results: equal
// answers, then a changed value, a changed key byte and a missing pair.
func TestFirstQueryDiff(t *testing.T) {
	tr, _ := Open(Options{Device: "cpu"})
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}
	if err := tr.Build(keys, []uint64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	qs := []Query{{Lo: []byte("a"), Hi: []byte("b")}, {Lo: []byte("b")}}
	answer := func() *Result {
		r, err := tr.Ranges(qs, 10)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := answer()
	if q := firstQueryDiff(answer(), want); q != -1 {
		t.Fatalf("equal answers: query %d differs", q)
	}
	for name, change := range map[string]func(r *Result){
		"value":    func(r *Result) { r.Values[2]++ },
		"key byte": func(r *Result) { r.Keys.Data[r.Keys.Offs[3]]++ },
		"pair":     func(r *Result) { r.Offsets[2]-- },
	} {
		got := answer()
		change(got)
		if q := firstQueryDiff(got, want); q != 1 {
			t.Errorf("%s changed in query 1: query %d differs", name, q)
		}
	}
}
