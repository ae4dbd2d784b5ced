// Package mpt is an Ethereum-compatible Merkle Patricia Trie: the modified
// radix-16 trie of Ethereum's yellow paper, with branch (17 slots),
// extension and leaf nodes, hex-prefix paths, RLP node encodings,
// Keccak-256 node hashes, nodes whose encoding is under 32 bytes inlined in
// their parent, and the root always hashed. Roots and proofs are byte for
// byte those of go-ethereum's trie package for the same key-value set
// (the structure of the trie depends only on that set, never on the order
// of operations); compat/ checks this against go-ethereum.
//
//	t, err := mpt.Open(mpt.Options{Device: "auto"}) // or Engine: mpt.EngineSequential
//	defer t.Close()
//	err = t.Update(keys, values)              // an empty value deletes
//	err = t.UpdateContext(ctx, keys, values)  // stops between chunks, undone
//	v, ok, err := t.Get(key)
//	root, err := t.Hash()
//	proof, err := t.Prove(key)
//
// After Close every call returns an error matching engine.ErrClosed.
//
// A Trie is a facade over one engine (engines.go): the sequential and the
// parallel CPU engines (cpu.go, parallel.go) and the GPU engine (trie_gpu.go
// and the *_gpu.go and .cu files), which all give the same trie, roots and
// proofs. trie.go holds the options and the facade's batch operations;
// open.go holds Open (the engine placed by the device options, as
// engine.Place places every warpkv engine); the embedded engine.Facade
// holds the lock, the placement and Close.
package mpt
