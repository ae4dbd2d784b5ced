package art

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUWalkLanes answers bounded ranges (ascending and descending, with
// and without either bound) and prefix scans, at limits from 1 to past a
// warp's lanes, with every walk of rangesCands (a thread per query,
// aq_cands, and tiles of 8, 16 and 32 lanes, aq_walk8/16/32), in the
// batch order and sorted by start key, on random trees whose nodes are of
// every kind: keys over all 256 bytes (N16 and N48 nodes), over 30 bytes
// (N48), three first bytes then any (N256), short keys beside long arena keys with long shared prefixes
// (prefixes past the stored 8 bytes, terminators), and 16-byte random keys
// with a few 8-byte ones, and compares every query's pairs with the CPU
// engine's.
func TestGPUWalkLanes(t *testing.T) {
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(22, 32))
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
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
		for _, limit := range []int{1, 3, 16, 33, 100} {
			for _, op := range ops {
				want, err := op.f(ct, limit)
				if err != nil {
					t.Fatal(err)
				}
				wp := resultPairs(want)
				for _, sorted := range []bool{false, true} {
					for _, lanes := range []int{1, 8, 16, 32} {
						g.sortQueries, g.walkLanes = sorted, lanes
						name := fmt.Sprintf("%s: %s, limit %d, %d lanes, sorted %v", tc.name, op.name, limit, lanes, sorted)
						got, err := op.f(gt, limit)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						gp := resultPairs(got)
						for q := range wp {
							if !slices.Equal(gp[q], wp[q]) {
								t.Fatalf("%s, query %d %q: %d pairs %.3q, want %d %.3q", name, q, qs[q], len(gp[q]), gp[q], len(wp[q]), wp[q])
							}
						}
					}
				}
			}
		}
		gt.Close()
	}
}

// TestGPUWalkLanesOption checks that walkKernel refuses a lane count it
// has no kernel for and takes each one it has.
func TestGPUWalkLanesOption(t *testing.T) {
	dev := gputest.Device(t)
	gt, err := Open(Options{GPU: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer gt.Close()
	g := gt.eng.(*gpuEngine)
	defer func(w int) { g.walkLanes = w }(g.walkLanes)
	for _, lanes := range []int{1, 8, 16, 32} {
		g.walkLanes = lanes
		if _, n, err := g.walkKernel(); err != nil || n != lanes {
			t.Fatalf("walk lanes %d: %d threads per query, %v", lanes, n, err)
		}
	}
	g.walkLanes = 4
	if _, _, err := g.walkKernel(); err == nil {
		t.Fatal("walk lanes 4: no error")
	}
}
