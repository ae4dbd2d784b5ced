package art

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/ctxtest"
)

// seqPairs collects a sequence's pairs.
func seqPairs(seq func(func([]byte, uint64) bool)) (keys []string, vals []uint64) {
	for k, v := range seq {
		keys, vals = append(keys, string(k)), append(vals, v)
	}
	return keys, vals
}

// scanModel is the expected answer of a scan: the sorted model keys in
// [lo, hi) (hi nil: no bound) with their values.
func scanModel(m map[string]uint64, lo, hi []byte) (keys []string, vals []uint64) {
	for k := range m {
		if bytes.Compare([]byte(k), lo) >= 0 && (hi == nil || bytes.Compare([]byte(k), hi) < 0) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		vals = append(vals, m[k])
	}
	return keys, vals
}

// TestScan checks All, Scan and ScanPrefix against a model over several
// pages, with keys of every length up to MaxKeyLen (whose successor bound
// is the end of their prefix), and a loop that stops early.
func TestScan(t *testing.T) {
	tr, err := Open(Options{Device: "cpu", Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	r := rand.New(rand.NewPCG(5, 6))
	m := map[string]uint64{}
	var keys [][]byte
	var vals []uint64
	for i := range 3000 {
		k := fmt.Appendf(nil, "k%c%d", 'a'+r.IntN(4), r.IntN(1000))
		if i%500 == 0 {
			k = append(bytes.Repeat([]byte{0xff}, MaxKeyLen-1), byte(i/500)) // long keys, last in order
		}
		keys, vals = append(keys, k), append(vals, uint64(i))
		m[string(k)] = uint64(i)
	}
	if err := tr.Insert(keys, vals); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		lo, hi []byte
		seq    func(func([]byte, uint64) bool)
	}{
		{"all", nil, nil, tr.All()},
		{"scan kb..kc", []byte("kb"), []byte("kc"), tr.Scan([]byte("kb"), []byte("kc"))},
		{"scan from kc", []byte("kc"), nil, tr.Scan([]byte("kc"), nil)},
		{"scan empty", []byte("kc"), []byte("kc"), tr.Scan([]byte("kc"), []byte("kc"))},
		{"scan hi below lo", []byte("kd"), []byte("ka"), tr.Scan([]byte("kd"), []byte("ka"))},
		{"prefix kd", []byte("kd"), []byte("ke"), tr.ScanPrefix([]byte("kd"))},
		{"prefix ff", []byte{0xff}, nil, tr.ScanPrefix([]byte{0xff})},
	} {
		gk, gv := seqPairs(c.seq)
		wk, wv := scanModel(m, c.lo, c.hi)
		if !slices.Equal(gk, wk) || !slices.Equal(gv, wv) {
			t.Errorf("%s: %d pairs, want %d", c.name, len(gk), len(wk))
		}
	}
	n := 0
	for range tr.All() {
		if n++; n == 100 {
			break
		}
	}
	if n != 100 {
		t.Fatalf("a loop that breaks at 100 ran %d times", n)
	}
}

// TestClosedTree checks that every call on a closed tree returns an error
// matching engine.ErrClosed and that its sequences are empty.
func TestClosedTree(t *testing.T) {
	tr, err := Open(Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Insert([][]byte{[]byte("a")}, []uint64{1}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	k := [][]byte{[]byte("a")}
	_, _, getErr := tr.Get(k)
	_, delErr := tr.Delete(k)
	_, _, rangeErr := tr.Range(nil, nil, 0)
	_, prefixErr := tr.Prefix(k, 0)
	_, updErr := tr.Update(k, []uint64{2})
	for name, err := range map[string]error{
		"build": tr.Build(k, []uint64{1}), "insert": tr.Insert(k, []uint64{1}), "get": getErr,
		"delete": delErr, "range": rangeErr, "prefix": prefixErr, "update": updErr, "check": tr.Check(),
		"build context":    tr.BuildContext(context.Background(), k, []uint64{1}),
		"insert context":   tr.InsertContext(context.Background(), k, []uint64{1}),
		"set lookup lanes": tr.SetLookupLanes(1),
	} {
		if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("%s after Close: %v, want engine.ErrClosed", name, err)
		}
	}
	if n := tr.Len(); n != 0 {
		t.Errorf("Len after Close: %d", n)
	}
	for range tr.All() {
		t.Fatal("All after Close yields a pair")
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestContextStopsBetweenChunks stops BuildContext and InsertContext
// before each chunk in turn and checks that the tree holds what it held
// before the call; then runs them to the end and checks the result.
func TestContextStopsBetweenChunks(t *testing.T) {
	tr, err := Open(Options{Device: "cpu", Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.chunk = 7
	var base, batch [][]byte
	var baseVals, batchVals []uint64
	for i := range 40 {
		base, baseVals = append(base, fmt.Appendf(nil, "key%03d", 2*i)), append(baseVals, uint64(i))
	}
	for i := range 50 { // half of them present, some twice
		batch, batchVals = append(batch, fmt.Appendf(nil, "key%03d", i%45)), append(batchVals, uint64(1000+i))
	}
	if err := tr.Build(base, baseVals); err != nil {
		t.Fatal(err)
	}
	// 1 look before the lock, then 1 before each of the 8 chunks
	ctxtest.Stops(t, 9, map[string]func(context.Context) error{
		"build":  func(ctx context.Context) error { return tr.BuildContext(ctx, batch, batchVals) },
		"insert": func(ctx context.Context) error { return tr.InsertContext(ctx, batch, batchVals) },
	}, func() ([]string, []uint64) { return seqPairs(tr.All()) }, tr.Check)
	m := map[string]uint64{}
	for i, k := range base {
		m[string(k)] = baseVals[i]
	}
	for i, k := range batch {
		m[string(k)] = batchVals[i]
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := tr.InsertContext(ctx, batch, batchVals); err != nil {
		t.Fatal(err)
	}
	gk, gv := seqPairs(tr.All())
	if wk, wv := scanModel(m, nil, nil); !slices.Equal(gk, wk) || !slices.Equal(gv, wv) {
		t.Fatalf("insert to the end: %d pairs, want %d", len(gk), len(wk))
	}
	if err := tr.BuildContext(ctx, batch, batchVals); err != nil {
		t.Fatal(err)
	}
	clear(m)
	for i, k := range batch {
		m[string(k)] = batchVals[i]
	}
	gk, gv = seqPairs(tr.All())
	if wk, wv := scanModel(m, nil, nil); !slices.Equal(gk, wk) || !slices.Equal(gv, wv) {
		t.Fatalf("build to the end: %d pairs, want %d", len(gk), len(wk))
	}
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestAscendPastLongestKey iterates with Ascend over pages that end at a
// key of MaxKeyLen bytes, whose next page starts at the end of its prefix.
func TestAscendPastLongestKey(t *testing.T) {
	tr, err := Open(Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var keys [][]byte
	for i := range 200 {
		k := bytes.Repeat([]byte{byte(i)}, MaxKeyLen)
		keys = append(keys, k)
	}
	keys = append(keys, bytes.Repeat([]byte{0xff}, MaxKeyLen))
	vals := make([]uint64, len(keys))
	if err := tr.Insert(keys, vals); err != nil {
		t.Fatal(err)
	}
	n := 0
	for it := tr.Ascend(nil); it.Next(); n++ {
		if !bytes.Equal(it.Key(), keys[n]) {
			t.Fatalf("key %d: %x..., want %x...", n, it.Key()[:2], keys[n][:2])
		}
	}
	if n != len(keys) {
		t.Fatalf("Ascend gave %d keys, want %d", n, len(keys))
	}
	if k, _ := seqPairs(tr.All()); len(k) != len(keys) {
		t.Fatalf("All gave %d keys, want %d", len(k), len(keys))
	}
}
