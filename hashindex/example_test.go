package hashindex_test

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/hashindex"
)

// Open an index, insert locations under key hashes, search and delete
// them, and close it.
func ExampleIndex() {
	ix, err := hashindex.Open(hashindex.Options{Buckets: 1 << 10, Device: "cpu"}) // "auto": a GPU when one is usable
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	hashes := []uint64{0x1234_5678_9abc_def0, 0x0fed_cba9_8765_4321}
	if _, err := ix.Insert(hashes, []uint32{7, 8}, nil); err != nil {
		panic(err)
	}
	out := make([]uint32, 3)
	if err := ix.Search(append(hashes, 42), out); err != nil {
		panic(err)
	}
	fmt.Println(out[0], out[1], out[2] == hashindex.NotFound)
	found := make([]bool, 1)
	if err := ix.Delete(hashes[:1], []uint32{7}, found); err != nil {
		panic(err)
	}
	fmt.Println(found[0], ix.Stats().Entries)
	ix.Close()
	fmt.Println(errors.Is(ix.Search(hashes, out), engine.ErrClosed))
	// Output:
	// 7 8 true
	// true 1
	// true
}
