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
