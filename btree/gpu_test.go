package btree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"warpkv/internal/gputest"
)

// newGPUPair returns a GPU tree and a CPU tree of the given order.
func newGPUPair(t *testing.T, order int) (g, c *Tree) {
	t.Helper()
	d := gputest.Device(t)
	g, err := New(Options{Order: order, GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	c, err = New(Options{Order: order, Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	return g, c
}

// gpuInputs returns named key generators for n keys: uniform, skewed
// (most keys in a narrow band, the rest spread), duplicate-heavy (a few
// distinct keys, 0 and 2^64-1 among them).
func gpuInputs() []struct {
	name string
	gen  func(r *rand.Rand, n int) []uint64
} {
	return []struct {
		name string
		gen  func(r *rand.Rand, n int) []uint64
	}{
		{"uniform", func(r *rand.Rand, n int) []uint64 {
			k := make([]uint64, n)
			for i := range k {
				k[i] = r.Uint64()
			}
			return k
		}},
		{"skewed", func(r *rand.Rand, n int) []uint64 {
			k := make([]uint64, n)
			for i := range k {
				if r.IntN(10) < 8 {
					k[i] = 1<<40 + r.Uint64N(uint64(n)/4+1)
				} else {
					k[i] = r.Uint64()
				}
			}
			return k
		}},
		{"duplicates", func(r *rand.Rand, n int) []uint64 {
			k := make([]uint64, n)
			distinct := uint64(n/16 + 2)
			for i := range k {
				switch x := r.Uint64N(distinct); x {
				case 0:
					k[i] = 0
				case 1:
					k[i] = ^uint64(0)
				default:
					k[i] = x * 0x9e3779b97f4a7c15
				}
			}
			return k
		}},
	}
}

// compareStores fails unless the GPU tree's node arrays equal the CPU
// tree's word for word, with the same root and counts.
func compareStores(t *testing.T, desc string, g, c *Tree) {
	t.Helper()
	if g.root != c.root || g.n != c.n || g.leaves != c.leaves || g.freed != c.freed {
		t.Fatalf("%s: gpu root %d n %d leaves %d freed %d, cpu %d %d %d %d", desc,
			g.root, g.n, g.leaves, g.freed, c.root, c.n, c.leaves, c.freed)
	}
	st, err := g.g.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if st.n != c.st.n {
		t.Fatalf("%s: gpu %d nodes, cpu %d", desc, st.n, c.st.n)
	}
	for id := uint32(0); int(id) < st.n; id++ {
		if !slices.Equal(st.keys(id), c.st.keys(id)) || !slices.Equal(st.slots(id), c.st.slots(id)) ||
			st.count(id) != c.st.count(id) || st.kind(id) != c.st.kind(id) || st.parent(id) != c.st.parent(id) ||
			st.next(id) != c.st.next(id) || st.prev(id) != c.st.prev(id) {
			t.Fatalf("%s: node %d differs: gpu kind %d count %d parent %d next %d prev %d, cpu %d %d %d %d %d",
				desc, id, st.kind(id), st.count(id), st.parent(id), st.next(id), st.prev(id),
				c.st.kind(id), c.st.count(id), c.st.parent(id), c.st.next(id), c.st.prev(id))
		}
	}
}

// compareGets fails unless both trees answer the lookups alike.
func compareGetsGPU(t *testing.T, desc string, g, c *Tree, q []uint64) {
	t.Helper()
	gv, gf := g.Get(q)
	cv, cf := c.Get(q)
	for i := range q {
		if gv[i] != cv[i] || gf[i] != cf[i] {
			t.Fatalf("%s: Get(%d): gpu %d %v, cpu %d %v", desc, q[i], gv[i], gf[i], cv[i], cf[i])
		}
	}
}

// compareRangesGPU fails unless both trees answer the range queries alike.
func compareRangesGPU(t *testing.T, desc string, g, c *Tree, los, his []uint64, limit int) {
	t.Helper()
	gk, gv, goff, err := g.Ranges(los, his, limit)
	if err != nil {
		t.Fatal(err)
	}
	ck, cv, coff, err := c.Ranges(los, his, limit)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gk, ck) || !slices.Equal(gv, cv) || !slices.Equal(goff, coff) {
		t.Fatalf("%s: Ranges limit %d: gpu %d pairs, cpu %d (offsets equal %v)", desc, limit, len(gk), len(ck),
			slices.Equal(goff, coff))
	}
	if len(los) > 0 {
		a, b := g.Range(los[0], his[0], limit)
		x, y := c.Range(los[0], his[0], limit)
		if !slices.Equal(a, x) || !slices.Equal(b, y) {
			t.Fatalf("%s: Range(%d, %d, %d): gpu %d pairs, cpu %d", desc, los[0], his[0], limit, len(a), len(x))
		}
	}
}

// TestGPUBuildGetRanges builds the same batches on both engines and
// compares the node arrays word for word, the invariants, lookups (hits,
// misses, 0 and 2^64-1) and range queries.
func TestGPUBuildGetRanges(t *testing.T) {
	for _, order := range []int{8, 64} {
		g, c := newGPUPair(t, order)
		sizes := []int{0, 1, order - 1, order, order + 1, 1000, 100_000}
		if order == DefaultOrder {
			sizes = append(sizes, 1<<20+3)
		}
		for _, in := range gpuInputs() {
			for _, n := range sizes {
				desc := fmt.Sprintf("order %d %s n %d", order, in.name, n)
				r := rand.New(rand.NewPCG(uint64(n), uint64(order)))
				keys := in.gen(r, n)
				vals := make([]uint64, n)
				for i := range vals {
					vals[i] = r.Uint64()
				}
				if err := g.Build(keys, vals); err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
				if err := c.Build(keys, vals); err != nil {
					t.Fatal(err)
				}
				if err := g.Check(); err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
				compareStores(t, desc, g, c)
				if g.Len() != c.Len() {
					t.Fatalf("%s: Len gpu %d cpu %d", desc, g.Len(), c.Len())
				}
				q := make([]uint64, 0, 2*n+4)
				q = append(q, keys...)
				for range n + 2 {
					q = append(q, r.Uint64())
				}
				q = append(q, 0, ^uint64(0))
				compareGetsGPU(t, desc, g, c, q)
				nq := min(n+3, 2000)
				los, his := make([]uint64, nq), make([]uint64, nq)
				span := ^uint64(0) / uint64(n+1) * 16 // about 16 keys of a uniform input
				for i := range los {
					a := r.Uint64()
					if n > 0 && i%2 == 0 {
						a = keys[r.IntN(n)]
					}
					b := a + r.Uint64N(span) // wraps now and then: lo > hi, empty
					switch {
					case i == 0:
						a, b = 0, ^uint64(0)
					case i%5 == 0:
						a, b = max(a, b), min(a, b) // lo > hi: empty
					}
					los[i], his[i] = a, b
				}
				for _, limit := range []int{0, 1, 10} {
					compareRangesGPU(t, desc, g, c, los, his, limit)
				}
			}
		}
	}
}

// TestGPUInsertDelete runs large insert and delete batches (uniform,
// skewed into one leaf, past the right spine, misses, then everything
// deleted and inserted again) on both engines and compares the node
// arrays word for word, the invariants, lookups and ranges; LastBatch
// reports each batch.
func TestGPUInsertDelete(t *testing.T) {
	for _, order := range []int{8, 64} {
		g, c := newGPUPair(t, order)
		r := rand.New(rand.NewPCG(uint64(order), 9))
		n := 200_000
		keys, vals := make([]uint64, n), make([]uint64, n)
		for i := range keys {
			keys[i], vals[i] = r.Uint64()>>1, r.Uint64()
		}
		var last BatchTimes // the GPU tree's LastBatch right after the batch
		both := func(desc string, f func(*Tree) error) {
			t.Helper()
			if err := f(g); err != nil {
				t.Fatalf("%s: gpu: %v", desc, err)
			}
			last = g.LastBatch()
			if err := f(c); err != nil {
				t.Fatalf("%s: cpu: %v", desc, err)
			}
			if err := g.Check(); err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			compareStores(t, desc, g, c)
			q := append(slices.Clone(keys[:min(len(keys), 5000)]), 0, ^uint64(0), r.Uint64())
			compareGetsGPU(t, desc, g, c, q)
			compareRangesGPU(t, desc, g, c, []uint64{0, keys[0], 1 << 62}, []uint64{^uint64(0), keys[0] + 1<<50, 1<<62 + 1<<55}, 0)
		}
		both("build", func(tr *Tree) error { return tr.Build(keys, vals) })
		if lb := last; lb.Op != "build" || lb.Keys != n || lb.Total <= 0 || lb.Work <= 0 || lb.Upload <= 0 {
			t.Fatalf("LastBatch after build: %+v", lb)
		}
		for round := range 4 {
			m := 50_000
			ik, iv := make([]uint64, m), make([]uint64, m)
			base := keys[r.IntN(len(keys))]
			for i := range ik {
				switch x := r.IntN(100); {
				case round == 1 && x < 85: // skewed: one leaf
					ik[i] = base + 1 + uint64(r.IntN(1<<16))
				case round == 2 && x < 50: // past the right spine
					ik[i] = 1<<63 + uint64(i)
				case x < 20: // existing: new value
					ik[i] = keys[r.IntN(len(keys))]
				default:
					ik[i] = r.Uint64() >> 1
				}
				iv[i] = r.Uint64()
			}
			ik[0], ik[1] = 0, ^uint64(0)
			both(fmt.Sprintf("order %d round %d insert", order, round), func(tr *Tree) error { return tr.Insert(ik, iv) })
			if lb := last; lb.Op != "insert" || lb.Keys != m || lb.Sort <= 0 || lb.Work <= 0 {
				t.Fatalf("LastBatch after insert: %+v", lb)
			}
			keys = append(keys, ik...)
			dk := make([]uint64, 60_000)
			for i := range dk {
				if i%4 == 3 {
					dk[i] = r.Uint64() // mostly misses
				} else {
					dk[i] = keys[r.IntN(len(keys))]
				}
			}
			if round == 3 { // a run of whole leaves
				dk = append(dk, keys[:20_000]...)
				slices.Sort(keys)
				dk = append(dk, keys[1000:9000]...)
			}
			both(fmt.Sprintf("order %d round %d delete", order, round), func(tr *Tree) error { return tr.Delete(dk) })
		}
		both("delete all", func(tr *Tree) error { return tr.Delete(keys) })
		if g.Len() != 0 {
			t.Fatalf("after deleting all: Len %d", g.Len())
		}
		both("insert into empty", func(tr *Tree) error { return tr.Insert(keys[:1000], vals[:1000]) })
		both("delete to underfull", func(tr *Tree) error { return tr.Delete(keys[:900]) })
	}
}

// TestDeviceOption checks the engine selection that runs without a GPU.
func TestDeviceOption(t *testing.T) {
	tr, err := New(Options{})
	if err != nil || tr.Backend().String() != "cpu" {
		t.Fatalf("default: %v, %v", tr, err)
	}
	if _, err := New(Options{Device: "bogus"}); err == nil {
		t.Fatal("Device bogus: no error")
	}
}
