package mpt_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/mpt"
)

// Open a trie, update it, read a value, the root hash and a proof, and
// close it.
func ExampleTrie() {
	t, err := mpt.Open(mpt.Options{Engine: mpt.EngineSequential}) // or Device "auto": the GPU engine when one is usable
	if err != nil {
		panic(err)
	}
	defer t.Close()
	keys := [][]byte{[]byte("doe"), []byte("dog"), []byte("dogglesworth")}
	vals := [][]byte{[]byte("reindeer"), []byte("puppy"), []byte("cat")}
	if err := t.UpdateContext(context.Background(), keys, vals); err != nil {
		panic(err)
	}
	v, ok, err := t.Get([]byte("dog"))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(v), ok)
	root, err := t.Hash()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", root)
	proof, err := t.Prove([]byte("dog"))
	if err != nil {
		panic(err)
	}
	got, err := mpt.VerifyProof(root, []byte("dog"), proof)
	fmt.Println(string(got), err)
	t.Close()
	_, err = t.Hash()
	fmt.Println(errors.Is(err, engine.ErrClosed))
	// Output:
	// puppy true
	// 8aad789dff2f538bca5d8ea56e8abe10f4c7ba3a5dea95fea4cd6e7c3a1168d3
	// puppy <nil>
	// true
}
