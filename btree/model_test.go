package btree

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	tbtree "github.com/tidwall/btree"

	"warpkv/gpu"
	"warpkv/internal/gputest"
)

// keyGen draws the keys of a batch.
type keyGen func(r *rand.Rand, ref *tbtree.Map[uint64, uint64], n int) []uint64

// existing returns a random key of ref, or a random key when ref is empty.
func existing(r *rand.Rand, ref *tbtree.Map[uint64, uint64]) uint64 {
	if ref.Len() == 0 {
		return r.Uint64()
	}
	k, _, _ := ref.GetAt(r.IntN(ref.Len()))
	return k
}

// anyKey is a uniform key, an existing key, or one of the extremes.
func anyKey(r *rand.Rand, ref *tbtree.Map[uint64, uint64]) uint64 {
	switch x := r.IntN(100); {
	case x < 2:
		return 0
	case x < 4:
		return math.MaxUint64
	case x < 30:
		return existing(r, ref)
	default:
		return r.Uint64()
	}
}

func uniformKeys(r *rand.Rand, ref *tbtree.Map[uint64, uint64], n int) []uint64 {
	k := make([]uint64, n)
	for i := range k {
		k[i] = anyKey(r, ref)
	}
	return k
}

// skewedKeys sends 85% of the batch just above one existing key (into one
// leaf; past the right spine when that key is the max), the rest anywhere.
func skewedKeys(r *rand.Rand, ref *tbtree.Map[uint64, uint64], n int) []uint64 {
	base := existing(r, ref)
	if r.IntN(3) == 0 {
		if m, _, ok := ref.Max(); ok {
			base = m
		}
	}
	base = min(base, math.MaxUint64-1<<21)
	k := make([]uint64, n)
	for i := range k {
		if r.IntN(100) < 85 {
			k[i] = base + 1 + r.Uint64N(1<<20)
		} else {
			k[i] = anyKey(r, ref)
		}
	}
	return k
}

// denseKeys draws from a small key space: many duplicates in a batch.
func denseKeys(r *rand.Rand, _ *tbtree.Map[uint64, uint64], n int) []uint64 {
	k := make([]uint64, n)
	for i := range k {
		k[i] = r.Uint64N(512)
	}
	if n > 0 {
		k[0] = math.MaxUint64
	}
	return k
}

func TestDifferential(t *testing.T) {
	cases := []struct {
		name    string
		order   int
		workers int
		gen     keyGen
		maxN    int
	}{
		{"uniform/order4", 4, 3, uniformKeys, 300},
		{"uniform/order5/w1", 5, 1, uniformKeys, 200},
		{"uniform/order16", 16, 4, uniformKeys, 3000},
		{"uniform/default", 0, 0, uniformKeys, 8000},
		{"skewed/order4", 4, 2, skewedKeys, 300},
		{"skewed/order16", 16, 3, skewedKeys, 3000},
		{"skewed/default", 0, 0, skewedKeys, 8000},
		{"dense/order4", 4, 2, denseKeys, 600},
		{"dense/default", 0, 3, denseKeys, 2000},
	}
	for ci, tc := range cases {
		for _, engine := range []string{"cpu", "gpu"} {
			t.Run(tc.name+"/"+engine, func(t *testing.T) {
				var dev *gpu.Device
				if engine == "gpu" {
					dev = gputest.Device(t)
				}
				runDifferential(t, uint64(ci), tc.order, tc.workers, tc.gen, tc.maxN, dev)
			})
		}
	}
}

// runDifferential runs random batches of builds, inserts (empty batches,
// batches larger than the tree among them) and deletes against
// tidwall/btree, checking the invariants, the contents, lookups and ranges
// after every batch. With dev it runs the GPU engine there, with a CPU
// engine twin whose node arrays must be equal word for word after every
// batch.
func runDifferential(t *testing.T, seed uint64, order, workers int, gen keyGen, maxN int, dev *gpu.Device) {
	r := rand.New(rand.NewPCG(seed, 42))
	tr, err := New(Options{Order: order, Workers: workers, GPU: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var twin *Tree
	if dev != nil {
		if twin, err = New(Options{Order: order, Workers: workers}); err != nil {
			t.Fatal(err)
		}
		defer twin.Close()
	}
	var ref tbtree.Map[uint64, uint64]
	steps := 100
	if raceEnabled {
		steps = 30
	}
	for step := range steps {
		n := r.IntN(maxN + 1)
		if r.IntN(10) == 0 {
			n = 0 // empty batch
		} else if r.IntN(8) == 0 {
			n = 2*ref.Len() + 1 // batch larger than the tree
		}
		keys := gen(r, &ref, n)
		op := r.IntN(10)
		apply := func(tr *Tree, vals []uint64) error {
			switch {
			case op == 0:
				return tr.Build(keys, vals)
			case op < 6:
				return tr.Insert(keys, vals)
			default:
				return tr.Delete(keys)
			}
		}
		var vals []uint64
		if op < 6 {
			vals = randVals(r, n)
		}
		if err := apply(tr, vals); err != nil {
			t.Fatal(err)
		}
		switch {
		case op == 0:
			ref.Clear()
			applyInsert(&ref, keys, vals)
		case op < 6:
			applyInsert(&ref, keys, vals)
		default:
			for _, k := range keys {
				ref.Delete(k)
			}
		}
		desc := fmt.Sprintf("step %d op %d batch %d", step, op, n)
		if err := tr.Check(); err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		if twin != nil {
			if err := apply(twin, vals); err != nil {
				t.Fatal(err)
			}
			compareStores(t, desc, tr, twin)
		}
		compareAll(t, desc, tr, &ref)
		compareGets(t, desc, tr, &ref, gen(r, &ref, 200))
		compareRanges(t, desc, r, tr, &ref)
	}
}

func randVals(r *rand.Rand, n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

func applyInsert(ref *tbtree.Map[uint64, uint64], keys, vals []uint64) {
	for i, k := range keys {
		ref.Set(k, vals[i])
	}
}

// compareAll checks Len and the whole contents through Range.
func compareAll(t *testing.T, desc string, tr *Tree, ref *tbtree.Map[uint64, uint64]) {
	t.Helper()
	if tr.Len() != ref.Len() {
		t.Fatalf("%s: Len %d, want %d", desc, tr.Len(), ref.Len())
	}
	k, v := tr.Range(0, math.MaxUint64, 0)
	if !slices.Equal(k, ref.Keys()) || !slices.Equal(v, ref.Values()) {
		t.Fatalf("%s: contents differ: %d pairs, want %d", desc, len(k), ref.Len())
	}
}

func compareGets(t *testing.T, desc string, tr *Tree, ref *tbtree.Map[uint64, uint64], keys []uint64) {
	t.Helper()
	vals, found := tr.Get(keys)
	for i, k := range keys {
		v, ok := ref.Get(k)
		if found[i] != ok || vals[i] != v {
			t.Fatalf("%s: Get(%d) = %d, %v; want %d, %v", desc, k, vals[i], found[i], v, ok)
		}
	}
}

// refRange is the model's answer to a range query.
func refRange(ref *tbtree.Map[uint64, uint64], lo, hi uint64, limit int) (keys, vals []uint64) {
	if lo > hi {
		return nil, nil
	}
	ref.Ascend(lo, func(k, v uint64) bool {
		if k > hi || (limit > 0 && len(keys) == limit) {
			return false
		}
		keys, vals = append(keys, k), append(vals, v)
		return true
	})
	return keys, vals
}

func compareRanges(t *testing.T, desc string, r *rand.Rand, tr *Tree, ref *tbtree.Map[uint64, uint64]) {
	t.Helper()
	q := 20
	los, his := make([]uint64, q), make([]uint64, q)
	for i := range q {
		los[i] = anyKey(r, ref)
		switch r.IntN(4) {
		case 0:
			his[i] = math.MaxUint64
		case 1:
			his[i] = los[i] // single key or nothing
		case 2:
			his[i] = r.Uint64() // often below lo: empty
		default:
			his[i] = los[i] + min(r.Uint64N(1<<60), math.MaxUint64-los[i])
		}
	}
	limit := []int{0, 1, 7, -1}[r.IntN(4)]
	keys, vals, offs, err := tr.Ranges(los, his, limit)
	if err != nil {
		t.Fatal(err)
	}
	for i := range q {
		wk, wv := refRange(ref, los[i], his[i], limit)
		gk, gv := tr.Range(los[i], his[i], limit)
		bk, bv := keys[offs[i]:offs[i+1]], vals[offs[i]:offs[i+1]]
		if !slices.Equal(gk, wk) || !slices.Equal(gv, wv) || !slices.Equal(bk, wk) || !slices.Equal(bv, wv) {
			t.Fatalf("%s: range [%d, %d] limit %d: Range %d pairs, Ranges %d, want %d", desc, los[i], his[i], limit, len(gk), len(bk), len(wk))
		}
	}
}
