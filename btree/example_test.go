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
