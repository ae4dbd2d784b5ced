package btree

import (
	"errors"
	"github.com/warpkv/warpkv/engine"
	"math"
	"slices"
	"testing"
)

func TestOptions(t *testing.T) {
	cases := []struct {
		o      Options
		order  int
		wantOK bool
	}{
		{Options{}, DefaultOrder, true},
		{Options{Order: MinOrder}, MinOrder, true},
		{Options{Order: 3}, 0, false},
		{Options{Order: MaxOrder + 1}, 0, false},
		{Options{Workers: -1}, 0, false},
	}
	for _, c := range cases {
		c.o.Device = "cpu"
		tr, err := Open(c.o)
		if (err == nil) != c.wantOK {
			t.Fatalf("Open(%+v): err %v", c.o, err)
		}
		if err == nil && tr.Order() != c.order {
			t.Fatalf("Open(%+v): order %d, want %d", c.o, tr.Order(), c.order)
		}
	}
}

// TestScenarios runs fixed batch sequences and checks the final contents.
func TestScenarios(t *testing.T) {
	seq := func(lo, n uint64) []uint64 {
		k := make([]uint64, n)
		for i := range k {
			k[i] = lo + uint64(i)
		}
		return k
	}
	type batch struct {
		del        bool
		keys, vals []uint64
	}
	cases := []struct {
		name    string
		batches []batch
		want    []uint64 // keys; each value is key+1 unless wantV
		wantV   []uint64
	}{
		{"extremes", []batch{{keys: []uint64{math.MaxUint64, 0}, vals: []uint64{1, 2}}}, []uint64{0, math.MaxUint64}, []uint64{2, 1}},
		{"last wins", []batch{{keys: []uint64{5, 5, 5}, vals: []uint64{1, 2, 3}}, {keys: []uint64{5, 5}, vals: []uint64{4, 9}}}, []uint64{5}, []uint64{9}},
		{"right spine", []batch{{keys: seq(0, 100)}, {keys: seq(100, 1000)}, {keys: []uint64{math.MaxUint64}}}, append(seq(0, 1100), math.MaxUint64), nil},
		{"left edge", []batch{{keys: seq(1000, 500)}, {keys: seq(0, 1000)}}, seq(0, 1500), nil},
		{"delete all", []batch{{keys: seq(0, 5000)}, {del: true, keys: seq(0, 5000)}}, nil, nil},
		{"delete then insert", []batch{{keys: seq(0, 5000)}, {del: true, keys: seq(0, 4990)}, {keys: seq(10, 20)}}, append(seq(10, 20), seq(4990, 10)...), nil},
		{"delete missing", []batch{{keys: seq(0, 10)}, {del: true, keys: []uint64{100, math.MaxUint64}}}, seq(0, 10), nil},
	}
	for _, c := range cases {
		for _, order := range []int{4, 7, 64} {
			tr, err := Open(Options{Order: order, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range c.batches {
				if b.del {
					_, err = tr.Delete(b.keys)
				} else {
					vals := b.vals
					if vals == nil {
						vals = make([]uint64, len(b.keys))
						for j, k := range b.keys {
							vals[j] = k + 1
						}
					}
					err = tr.Insert(b.keys, vals)
				}
				if err != nil {
					t.Fatalf("%s order %d batch %d: %v", c.name, order, i, err)
				}
				if err := tr.Check(); err != nil {
					t.Fatalf("%s order %d batch %d: %v", c.name, order, i, err)
				}
			}
			wantV := c.wantV
			if wantV == nil && c.want != nil {
				wantV = make([]uint64, len(c.want))
				for j, k := range c.want {
					wantV[j] = k + 1
				}
			}
			var k, v []uint64
			for key, val := range tr.All() {
				k, v = append(k, key), append(v, val)
			}
			if !slices.Equal(k, c.want) || !slices.Equal(v, wantV) {
				t.Fatalf("%s order %d: got %d pairs %v..., want %d", c.name, order, len(k), k[:min(len(k), 5)], len(c.want))
			}
			if tr.Len() != len(c.want) {
				t.Fatalf("%s order %d: Len %d, want %d", c.name, order, tr.Len(), len(c.want))
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	tr, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Insert([]uint64{1}, nil); err == nil {
		t.Fatal("Insert with missing values succeeded")
	}
	if err := tr.Build([]uint64{1}, []uint64{1, 2}); err == nil {
		t.Fatal("Build with extra values succeeded")
	}
	if _, _, _, err := tr.Ranges([]uint64{1}, nil, 0); err == nil {
		t.Fatal("Ranges with missing highs succeeded")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Insert([]uint64{1}, []uint64{1}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Insert after Close: %v", err)
	}
	if _, _, err := tr.Get([]uint64{1}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCPURangesKeepAndWalkAgain answers chunks of queries whose pairs
// outgrow what a chunk keeps from its one walk (long ranges among short
// ones, more than one chunk), so that later queries of a chunk are walked
// again to be written, and compares every query with Range.
func TestCPURangesKeepAndWalkAgain(t *testing.T) {
	tr, err := Open(Options{Device: "cpu", Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const n = 50_000
	keys, vals := make([]uint64, n), make([]uint64, n)
	for i := range keys {
		keys[i], vals[i] = uint64(3*i), uint64(i)
	}
	if err := tr.Build(keys, vals); err != nil {
		t.Fatal(err)
	}
	q := 2*rangeChunk + 17
	los, his := make([]uint64, q), make([]uint64, q)
	for i := range los {
		los[i] = uint64(7 * i)
		his[i] = los[i] + 40
		if i%50 == 3 {
			his[i] = los[i] + 3*rangeChunkPairs // one query alone outgrows a chunk's kept pairs
		}
	}
	for _, limit := range []int{0, 5000} {
		r, err := tr.RangesInto(nil, los, his, limit)
		if err != nil {
			t.Fatal(err)
		}
		for i := range los {
			k, v, err := tr.Range(los[i], his[i], limit)
			if err != nil {
				t.Fatal(err)
			}
			a, b := r.Offsets[i], r.Offsets[i+1]
			if !slices.Equal(r.Keys[a:b], k) || !slices.Equal(r.Values[a:b], v) {
				t.Fatalf("limit %d, query %d [%d, %d): %d pairs, Range %d", limit, i, los[i], his[i], b-a, len(k))
			}
		}
	}
}
