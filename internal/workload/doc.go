// Package workload holds the inputs tests and benchmarks feed to warpkv's
// engines, kept out of the engine packages:
//
//   - datasets.go: synthetic key-value data sets with the statistics of the
//     GPU MPT paper's benchmark data sets (warpkv bench mpt and compat's
//     mptbench build tries from them);
//   - mptedge.go: the edge-case operation sequences every Merkle Patricia
//     Trie engine must handle exactly as go-ethereum does (batches that
//     leave the trie empty or unchanged, that cancel out, that delete
//     everything and insert again, that collapse branches, with values
//     small enough to be inlined). The mpt package's tests compare its
//     engines on them with the sequential engine; compat/ compares every
//     engine, and the built `warpkv mpt` command, with go-ethereum.
package workload
