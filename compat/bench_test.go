package compat

import (
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb"

	"github.com/warpkv/warpkv/mpt"
)

// benchPairs returns n pairs with 32-byte random keys and 100-byte values.
func benchPairs(n int) (keys, values [][]byte) {
	r := rand.New(rand.NewPCG(7, 7))
	keys, values = make([][]byte, n), make([][]byte, n)
	for i := range n {
		keys[i], values[i] = make([]byte, 32), make([]byte, 100)
		for j := range keys[i] {
			keys[i][j] = byte(r.Uint32())
		}
		for j := range values[i] {
			values[i][j] = byte(r.Uint32())
		}
	}
	return keys, values
}

// BenchmarkUpdateHash: insert 100 K pairs into an empty trie, then hash.
func BenchmarkUpdateHash(b *testing.B) {
	keys, values := benchPairs(100_000)
	b.Run("mpt", func(b *testing.B) {
		for b.Loop() {
			tr, err := mpt.Open(mpt.Options{Engine: mpt.EngineSequential})
			if err != nil {
				b.Fatal(err)
			}
			if err := tr.Update(keys, values); err != nil {
				b.Fatal(err)
			}
			tr.Hash()
		}
	})
	b.Run("geth", func(b *testing.B) {
		for b.Loop() {
			tr := trie.NewEmpty(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil))
			for i := range keys {
				tr.MustUpdate(keys[i], values[i])
			}
			tr.Hash()
		}
	})
}
