package art_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/engine"
)

// Open a tree, insert, look up, scan a range and a prefix, and close it.
func ExampleTree() {
	t, err := art.Open(art.Options{Device: "cpu"}) // "auto": a GPU when one is usable
	if err != nil {
		panic(err)
	}
	defer t.Close()
	keys := [][]byte{[]byte("apple"), []byte("apricot"), []byte("banana"), []byte("cherry")}
	if err := t.InsertContext(context.Background(), keys, []uint64{1, 2, 3, 4}); err != nil {
		panic(err)
	}
	vals, found, err := t.Get([][]byte{[]byte("banana"), []byte("durian")})
	if err != nil {
		panic(err)
	}
	fmt.Println(vals, found)
	for k, v := range t.Scan([]byte("apricot"), []byte("cherry")) { // half-open
		fmt.Println(string(k), v)
	}
	for k := range t.ScanPrefix([]byte("ap")) {
		fmt.Println("ap:", string(k))
	}
	t.Close()
	_, _, err = t.Get(keys)
	fmt.Println(errors.Is(err, engine.ErrClosed))
	// Output:
	// [3 0] [true false]
	// apricot 2
	// banana 3
	// ap: apple
	// ap: apricot
	// true
}

// Answer batches of prefix scans and range queries into one reused Result:
// on the GPU engine NewResult's arrays are pinned and the device writes
// the answers into them by DMA with no host copy.
func ExampleTree_PrefixInto() {
	t, err := art.Open(art.Options{Device: "cpu"}) // "auto": a GPU when one is usable
	if err != nil {
		panic(err)
	}
	defer t.Close()
	keys := [][]byte{[]byte("apple"), []byte("apricot"), []byte("banana"), []byte("blueberry"), []byte("cherry")}
	if err := t.Insert(keys, []uint64{1, 2, 3, 4, 5}); err != nil {
		panic(err)
	}
	r := t.NewResult()
	defer r.Free()
	if r, err = t.PrefixInto(r, [][]byte{[]byte("ap"), []byte("b"), []byte("z")}, 0); err != nil {
		panic(err)
	}
	for i := range len(r.Offsets) - 1 {
		ks, vs := r.Query(i)
		fmt.Printf("%q %v\n", ks, vs)
	}
	// The same Result again: [banana, cherry), at most 5 pairs.
	if r, err = t.RangesInto(r, []art.Query{{Lo: []byte("banana"), Hi: []byte("cherry")}}, 5); err != nil {
		panic(err)
	}
	ks, vs := r.Query(0)
	fmt.Printf("%q %v\n", ks, vs)
	// Output:
	// ["apple" "apricot"] [1 2]
	// ["banana" "blueberry"] [3 4]
	// [] []
	// ["banana" "blueberry"] [3 4]
}
