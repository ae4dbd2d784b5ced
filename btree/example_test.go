package btree_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/btree"
	"github.com/warpkv/warpkv/engine"
)

// Open a tree, build it, look keys up, read a half-open range, iterate and
// close it.
func ExampleTree() {
	t, err := btree.Open(btree.Options{Device: "cpu"}) // "auto": a GPU when one is usable
	if err != nil {
		panic(err)
	}
	defer t.Close()
	if err := t.BuildContext(context.Background(), []uint64{5, 1, 3, 2}, []uint64{50, 10, 30, 20}); err != nil {
		panic(err)
	}
	vals, found, err := t.Get([]uint64{3, 4})
	if err != nil {
		panic(err)
	}
	fmt.Println(vals, found)
	keys, _, err := t.Range(1, 3, 0) // [1, 3): 3 is not included
	if err != nil {
		panic(err)
	}
	fmt.Println(keys)
	for k, v := range t.All() {
		fmt.Printf("%d=%d;", k, v)
	}
	fmt.Println()
	n, err := t.Delete([]uint64{1, 9})
	fmt.Println(n, err, t.Len())
	t.Close()
	_, _, err = t.Get([]uint64{1})
	fmt.Println(errors.Is(err, engine.ErrClosed))
	// Output:
	// [30 0] [true false]
	// [1 2]
	// 1=10;2=20;3=30;5=50;
	// 1 <nil> 3
	// true
}

// Answer batches of range queries into one reused Result and look keys up
// from a Staging: on the GPU engine both are pinned, so the device reads
// and writes them by DMA with no host copy.
func ExampleTree_RangesInto() {
	t, err := btree.Open(btree.Options{Device: "cpu"}) // "auto": a GPU when one is usable
	if err != nil {
		panic(err)
	}
	defer t.Close()
	if err := t.Build([]uint64{10, 20, 30, 40, 50}, []uint64{1, 2, 3, 4, 5}); err != nil {
		panic(err)
	}
	r := t.NewResult()
	defer r.Free()
	batches := []struct{ los, his []uint64 }{
		{los: []uint64{10, 35}, his: []uint64{35, 60}}, // [10, 35) and [35, 60)
		{los: []uint64{0, 21}, his: []uint64{100, 22}}, // everything, and nothing
	}
	for _, b := range batches {
		if r, err = t.RangesInto(r, b.los, b.his, 0); err != nil {
			panic(err)
		}
		for i := range len(r.Offsets) - 1 {
			fmt.Print(r.Keys[r.Offsets[i]:r.Offsets[i+1]])
		}
		fmt.Println()
	}
	st, err := t.NewStaging(3)
	if err != nil {
		panic(err)
	}
	defer st.Free()
	copy(st.Keys, []uint64{20, 25, 50})
	if err := t.LookupStaged(st, 3); err != nil {
		panic(err)
	}
	fmt.Println(st.Values, st.Found)
	// Output:
	// [10 20 30][40 50]
	// [10 20 30 40 50][]
	// [2 0 5] [1 0 1]
}
