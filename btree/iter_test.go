package btree

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/ctxtest"
)

// seqPairs collects a sequence's pairs.
func seqPairs(seq func(func(uint64, uint64) bool)) (keys, vals []uint64) {
	for k, v := range seq {
		keys, vals = append(keys, k), append(vals, v)
	}
	return keys, vals
}

// TestHalfOpenRanges checks that Range, Ranges and Scan are half-open
// [lo, hi), that All reaches math.MaxUint64, and that a loop may stop
// early.
func TestHalfOpenRanges(t *testing.T) {
	tr, err := Open(Options{Device: "cpu", Order: 4, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	keys := []uint64{0, 1, 2, 3, 5, 8, math.MaxUint64 - 1, math.MaxUint64}
	for i := uint64(100); i < 1100; i++ { // several pages
		keys = append(keys, i)
	}
	vals := make([]uint64, len(keys))
	for i, k := range keys {
		vals[i] = k ^ 0xabc
	}
	if err := tr.Build(keys, vals); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(keys))
	in := func(lo, hi uint64) []uint64 {
		var out []uint64
		for _, k := range sorted {
			if k >= lo && k < hi {
				out = append(out, k)
			}
		}
		return out
	}
	for _, q := range [][2]uint64{{1, 3}, {0, 0}, {3, 3}, {5, 2}, {0, 1}, {4, 9}, {0, math.MaxUint64}, {math.MaxUint64 - 1, math.MaxUint64}, {99, 1000}} {
		want := in(q[0], q[1])
		k, _, err := tr.Range(q[0], q[1], 0)
		if err != nil || !slices.Equal(k, want) {
			t.Errorf("Range(%d, %d, 0) = %v, %v; want %v", q[0], q[1], k, err, want)
		}
		sk, sv := seqPairs(tr.Scan(q[0], q[1]))
		if !slices.Equal(sk, want) || len(sv) != len(sk) || (len(sv) > 0 && sv[0] != sk[0]^0xabc) {
			t.Errorf("Scan(%d, %d) = %d keys, want %d", q[0], q[1], len(sk), len(want))
		}
		rk, _, off, err := tr.Ranges([]uint64{q[0]}, []uint64{q[1]}, 0)
		if err != nil || !slices.Equal(rk[off[0]:off[1]], want) {
			t.Errorf("Ranges(%d, %d) = %v, %v; want %v", q[0], q[1], rk, err, want)
		}
	}
	if k, _, _ := tr.Range(1, 3, 0); !slices.Equal(k, []uint64{1, 2}) {
		t.Errorf("Range(1, 3, 0) = %v, want [1 2]", k)
	}
	if k, _, _ := tr.Range(0, 100, 2); !slices.Equal(k, []uint64{0, 1}) {
		t.Errorf("Range(0, 100, 2) = %v, want [0 1]", k)
	}
	if ak, _ := seqPairs(tr.All()); !slices.Equal(ak, sorted) {
		t.Errorf("All: %d keys, want %d (last %d)", len(ak), len(sorted), ak[len(ak)-1])
	}
	n := 0
	for range tr.All() {
		if n++; n == 10 {
			break
		}
	}
	if n != 10 {
		t.Fatalf("a loop that breaks at 10 ran %d times", n)
	}
}

// TestClosedTree checks that every call on a closed tree returns an error
// matching engine.ErrClosed.
func TestClosedTree(t *testing.T) {
	tr, err := Open(Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Insert([]uint64{1}, []uint64{1}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	k := []uint64{1}
	_, _, getErr := tr.Get(k)
	_, delErr := tr.Delete(k)
	_, _, rangeErr := tr.Range(0, 9, 0)
	_, _, _, rangesErr := tr.Ranges(k, k, 0)
	for name, err := range map[string]error{
		"build": tr.Build(k, k), "insert": tr.Insert(k, k), "get": getErr, "delete": delErr,
		"range": rangeErr, "ranges": rangesErr, "lookup": tr.Lookup(k, make([]uint64, 1), make([]bool, 1)),
		"check": tr.Check(), "build context": tr.BuildContext(context.Background(), k, k),
		"insert context": tr.InsertContext(context.Background(), k, k),
	} {
		if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("%s after Close: %v, want engine.ErrClosed", name, err)
		}
	}
	for range tr.All() {
		t.Fatal("All after Close yields a pair")
	}
}

// TestContextStopsBetweenChunks stops BuildContext and InsertContext
// before each chunk in turn and checks that the tree holds what it held
// before the call; then runs them to the end.
func TestContextStopsBetweenChunks(t *testing.T) {
	tr, err := Open(Options{Device: "cpu", Order: 4, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.chunk = 7
	var base, baseVals, batch, batchVals []uint64
	for i := range uint64(40) {
		base, baseVals = append(base, 2*i), append(baseVals, i)
	}
	for i := range uint64(50) { // half of them present, some twice
		batch, batchVals = append(batch, i%45), append(batchVals, 1000+i)
	}
	if err := tr.Build(base, baseVals); err != nil {
		t.Fatal(err)
	}
	// 1 look before the work, then 1 before each of the 8 chunks
	ctxtest.Stops(t, 9, map[string]func(context.Context) error{
		"build":  func(ctx context.Context) error { return tr.BuildContext(ctx, batch, batchVals) },
		"insert": func(ctx context.Context) error { return tr.InsertContext(ctx, batch, batchVals) },
	}, func() ([]uint64, []uint64) { return seqPairs(tr.All()) }, tr.Check)
	m := map[uint64]uint64{}
	for i, k := range base {
		m[k] = baseVals[i]
	}
	for i, k := range batch {
		m[k] = batchVals[i]
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := tr.InsertContext(ctx, batch, batchVals); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		gk, gv := seqPairs(tr.All())
		wk := slices.Sorted(func(yield func(uint64) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		for i, k := range wk {
			if i >= len(gk) || gk[i] != k || gv[i] != m[k] {
				t.Fatalf("%s: pair %d differs (%d pairs, want %d)", what, i, len(gk), len(wk))
			}
		}
		if len(gk) != len(wk) {
			t.Fatalf("%s: %d pairs, want %d", what, len(gk), len(wk))
		}
		if err := tr.Check(); err != nil {
			t.Fatal(err)
		}
	}
	check("insert to the end")
	if err := tr.BuildContext(ctx, batch, batchVals); err != nil {
		t.Fatal(err)
	}
	clear(m)
	for i, k := range batch {
		m[k] = batchVals[i]
	}
	check("build to the end")
}
