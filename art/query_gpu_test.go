package art

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// resultPairs returns a Result's pairs per query.
func resultPairs(r *Result) [][]string {
	out := make([][]string, len(r.Offsets)-1)
	for q := range out {
		ks, vs := r.Query(q)
		for i := range ks {
			out[q] = append(out[q], pair(ks[i], vs[i]))
		}
	}
	return out
}

// TestGPUQueryOrder answers batches of range and prefix queries large
// enough to be sorted by start key (querySortMin) on the GPU engine, with
// the sort and without, ascending and descending, with and without limits
// (the single-walk slots and the two passes), and compares them with the
// CPU engine's answers.
//
// The query order is opt-in (gpuEngine.sortQueries) and this test did not
// finish within 100 s on an H200 (2026-11-28): it runs only with
// WARPKV_ART_QUERY_ORDER=1, so that the GPU suite is not held up, until
// it passes there and the order can be measured (issue 22).
func TestGPUQueryOrder(t *testing.T) {
	if os.Getenv("WARPKV_ART_QUERY_ORDER") != "1" {
		t.Skip("opt-in query order not verified on a GPU yet: set WARPKV_ART_QUERY_ORDER=1 to run it")
	}
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(22, 5))
	gt, ct := openTwins(t, dev)
	n := 60000
	keys, vals := make([][]byte, n), make([]uint64, n)
	for i := range keys {
		keys[i], vals[i] = randomBytes(r, 0, 40, []byte("abcdefgh\x00\xff")), r.Uint64()
	}
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Build(keys, vals); err != nil {
			t.Fatal(err)
		}
	}
	Q := 3 * querySortMin
	qs, prefixes := make([]Query, Q), make([][]byte, Q)
	for i := range qs {
		lo := randomBytes(r, 0, 12, []byte("abcdefgh\x00\xff"))
		var hi []byte
		switch i % 4 {
		case 0:
			hi = append(append([]byte{}, lo...), 0xff, 0xff)
		case 1:
			hi = randomBytes(r, 0, 12, []byte("abcdefgh\x00\xff"))
		case 2:
			hi = nil // no upper bound
		default:
			hi = append(append([]byte{}, lo...), 'c')
		}
		qs[i] = Query{Lo: lo, Hi: hi}
		prefixes[i] = randomBytes(r, 0, 4, []byte("abcdefgh\x00\xff"))
	}
	g := gt.eng.(*gpuEngine)
	defer func(v bool) { g.sortQueries = v }(g.sortQueries)
	for _, limit := range []int{0, 1, 16} {
		want := map[string][][]string{}
		for name, f := range map[string]func(*Tree) (*Result, error){
			"ranges":     func(tr *Tree) (*Result, error) { return tr.Ranges(qs, limit) },
			"rangesDesc": func(tr *Tree) (*Result, error) { return tr.RangesDesc(qs, limit) },
			"prefix":     func(tr *Tree) (*Result, error) { return tr.Prefix(prefixes, limit) },
		} {
			res, err := f(ct)
			if err != nil {
				t.Fatal(err)
			}
			want[name] = resultPairs(res)
			for _, sorted := range []bool{true, false} {
				g.sortQueries = sorted
				res, err := f(gt)
				if err != nil {
					t.Fatalf("%s, limit %d, sorted %v: %v", name, limit, sorted, err)
				}
				got := resultPairs(res)
				for q := range got {
					if !slices.Equal(got[q], want[name][q]) {
						t.Fatalf("%s, limit %d, sorted %v, query %d: %d pairs, want %d", name, limit, sorted, q, len(got[q]), len(want[name][q]))
					}
				}
			}
		}
	}
}
