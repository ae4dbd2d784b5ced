package server

import (
	"fmt"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/kv"
)

// TestHoistReadsOrder checks the order hoistReads gives: Gets of keys no
// earlier op writes first, then the rest in batch order; nil when that is
// the batch order or the batch flushes.
func TestHoistReadsOrder(t *testing.T) {
	get := func(k string) kv.Op { return kv.Op{Kind: kv.Get, Key: []byte(k)} }
	set := func(k string) kv.Op { return kv.Op{Kind: kv.Set, Key: []byte(k)} }
	for _, c := range []struct {
		name string
		ops  []kv.Op
		want []int
	}{
		{"gets only", []kv.Op{get("a"), get("b")}, nil},
		{"gets before the write", []kv.Op{get("a"), set("b"), set("c")}, nil},
		{"get after a write of another key", []kv.Op{set("a"), get("b")}, []int{1, 0}},
		{"get after a write of its key", []kv.Op{set("a"), get("a")}, []int{0, 1}},
		{"mixed", []kv.Op{get("x"), set("a"), get("a"), get("b"), set("b"), get("b"), get("c")}, []int{0, 3, 6, 1, 2, 4, 5}},
		{"flush", []kv.Op{set("a"), {Kind: kv.Flush}, get("b")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := new(Engine).hoistReads(c.ops, new(scratch))
			if !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}

// TestHoistReadsLargeBatch runs hoistReads on a pipelined batch of 20,000
// gets with a write every 20 ops: exactly the gets of keys not written
// before them come first, in order, then the rest in order, every op once.
func TestHoistReadsLargeBatch(t *testing.T) {
	ops := largeBatch(20000)
	perm := new(Engine).hoistReads(ops, new(scratch))
	if len(perm) != len(ops) {
		t.Fatalf("%d ops in the order, want %d", len(perm), len(ops))
	}
	seen := make([]bool, len(ops))
	written := map[string]bool{}
	var want []int
	for i, op := range ops {
		if op.Kind != kv.Get {
			written[string(op.Key)] = true
		} else if !written[string(op.Key)] {
			want = append(want, i)
		}
	}
	if !slices.Equal(perm[:len(want)], want) {
		t.Fatalf("the first %d ops of the order are not the gets of keys not written before them", len(want))
	}
	for _, i := range perm {
		if seen[i] {
			t.Fatalf("op %d twice", i)
		}
		seen[i] = true
	}
	for k := len(want) + 1; k < len(perm); k++ {
		if perm[k] < perm[k-1] {
			t.Fatalf("the ops after the hoisted gets are not in batch order at position %d", k)
		}
	}
}

// largeBatch is n ops: gets of keys k0, k1, ... with a set every 20 ops
// of a key that a get 40 ops later reads again.
func largeBatch(n int) []kv.Op {
	ops := make([]kv.Op, n)
	for i := range ops {
		ops[i] = kv.Op{Kind: kv.Get, Key: fmt.Appendf(nil, "k%d", i)}
		if i%20 == 19 {
			ops[i] = kv.Op{Kind: kv.Set, Key: fmt.Appendf(nil, "k%d", i+40)}
		}
	}
	return ops
}

// BenchmarkHoistReads times hoistReads on a pipelined batch of 5,000 ops
// with a write every 20.
func BenchmarkHoistReads(b *testing.B) {
	ops := largeBatch(5000)
	e, sc := new(Engine), new(scratch)
	b.ReportAllocs()
	for b.Loop() {
		e.hoistReads(ops, sc)
	}
}
