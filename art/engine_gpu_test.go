package art

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// pairsOf returns a tree's pairs in order.
func pairsOf(t *testing.T, tr *Tree) []string {
	t.Helper()
	r, err := tr.Ranges([]Query{{}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ks, vs := r.Query(0)
	out := make([]string, len(ks))
	for i := range ks {
		out[i] = pair(ks[i], vs[i])
	}
	return out
}

// TestGPUOutOfMemory makes every device allocation of a batch fail: the
// batch returns an error matching gpu.ErrOutOfMemory and the tree is as it
// was (contents, invariants, later batches agree with the CPU engine).
func TestGPUOutOfMemory(t *testing.T) {
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(3, 4))
	gt, ct := openTwins(t, dev)
	keys := func(n int) ([][]byte, []uint64) {
		k, v := make([][]byte, n), make([]uint64, n)
		for i := range k {
			k[i], v[i] = randomBytes(r, 0, 48, []byte("abcdefgh")), r.Uint64()
		}
		return k, v
	}
	k0, v0 := keys(2000)
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Build(k0, v0); err != nil {
			t.Fatal(err)
		}
	}
	before := pairsOf(t, gt)
	g := gt.eng.(*gpuEngine)
	for _, op := range []string{"insert", "build"} {
		k1, v1 := keys(20000) // more new records than any pool's headroom
		g.failGrowth = true
		var err error
		if op == "insert" {
			err = gt.Insert(k1, v1)
		} else {
			err = gt.Build(k1, v1)
		}
		g.failGrowth = false
		if !errors.Is(err, gpu.ErrOutOfMemory) {
			t.Fatalf("%s: got %v, want an out-of-memory error", op, err)
		}
		if err := gt.Check(); err != nil {
			t.Fatalf("%s: after the failed batch: %v", op, err)
		}
		if got := pairsOf(t, gt); !slices.Equal(got, before) {
			t.Fatalf("%s: contents changed by the failed batch (%d pairs, %d before)", op, len(got), len(before))
		}
	}
	// The tree goes on: same answers as the CPU engine.
	k2, v2 := keys(20000)
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Insert(k2, v2); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Delete(k0[:1000]); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := pairsOf(t, gt), pairsOf(t, ct); !slices.Equal(a, b) {
		t.Fatalf("after the failed batches the engines differ: %d vs %d pairs", len(a), len(b))
	}
}

// TestGPULargeBatches compares the engines' layouts word for word after
// batches large enough to spread over many blocks (wide root tables,
// N256 nodes, long keys), where the differential suite's batches are small.
func TestGPULargeBatches(t *testing.T) {
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(7, 8))
	gt, ct := openTwins(t, dev)
	key := func() []byte {
		switch r.IntN(4) {
		case 0:
			return randomBytes(r, 16, 16, nil)
		case 1:
			return fmt.Appendf(nil, "user:%08d:%s", r.IntN(1<<20), randomBytes(r, 0, 60, []byte("xyz")))
		default:
			return randomBytes(r, 1, 8, nil)
		}
	}
	for step := range 8 {
		n := 200000
		k, v := make([][]byte, n), make([]uint64, n)
		for i := range k {
			k[i], v[i] = key(), r.Uint64()
		}
		for _, tr := range []*Tree{gt, ct} {
			var err error
			switch step % 3 {
			case 0:
				err = tr.Insert(k, v)
			case 1:
				_, err = tr.Delete(k[:n/2])
			default:
				_, err = tr.Update(k, v)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := gt.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		a, _ := gt.eng.snapshot()
		b, _ := ct.eng.snapshot()
		if err := equalStores(b, a); err != nil {
			t.Fatalf("step %d: layouts differ (cpu, gpu): %v", step, err)
		}
		t.Logf("step %d: %d keys, width %d, timings %v", step, gt.Len(), gt.Width(), gt.LastBatch())
	}
}

// TestGPULookupLanes compares lookups with 8 lanes per key with one
// thread per key on long and short keys, present and absent.
func TestGPULookupLanes(t *testing.T) {
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(9, 10))
	tr, err := Open(Options{GPU: dev, LookupLanes: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	keys, vals := make([][]byte, 30000), make([]uint64, 30000)
	for i := range keys {
		keys[i], vals[i] = randomBytes(r, 0, 300, []byte("ab\x00")), r.Uint64()
		if i%3 == 0 {
			keys[i] = append(bytes.Repeat([]byte{'p'}, 200), keys[i]...)
		}
	}
	if err := tr.Insert(keys, vals); err != nil {
		t.Fatal(err)
	}
	probe := append(slices.Clone(keys[:5000]), keys[0][:len(keys[0])/2], []byte("zz"), nil)
	v8, f8, err := tr.Get(probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetLookupLanes(1); err != nil {
		t.Fatal(err)
	}
	v1, f1, err := tr.Get(probe)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v8, v1) || !slices.Equal(f8, f1) {
		t.Fatal("8 lanes per key and one thread per key answer differently")
	}
	if err := tr.SetLookupLanes(3); err == nil {
		t.Fatal("3 lanes accepted")
	}
}
