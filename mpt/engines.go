package mpt

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// trieEngine is one engine behind a Trie: cpuTrie (the sequential and
// parallel CPU engines) or gpuTrie (the GPU engine). The Trie validates
// arguments and wraps errors; the engines do the work. Calls are
// serialized by the Trie's caller.
type trieEngine interface {
	// update applies a batch of equal-length keys and values (an empty
	// value deletes; the last operation on a key wins).
	update(keys, values [][]byte) error
	// rootHash hashes what is dirty and returns the root hash.
	rootHash() ([32]byte, error)
	// lookup returns each key's value (nil when absent) and presence.
	lookup(keys [][]byte) ([][]byte, []bool, error)
	// lookupInto writes the values back to back into out.
	lookupInto(keys [][]byte, out *Values) error
	// prove returns each key's proof (the root hashed first).
	prove(keys [][]byte) ([][][]byte, error)
	// snapshot returns the trie as CPU nodes (for iteration): the nodes
	// themselves on the CPU engines, a downloaded copy on the GPU engine.
	snapshot() (node, error)
	// backend is where the engine runs.
	backend() gpu.Backend
	// lastBatch is the time breakdown of the last batch operation.
	lastBatch() engine.Timings
	// stats are the engine's counters of its last update.
	stats() BatchStats
	// close frees the engine's memory (and device, when it owns it).
	close() error
}

var (
	_ trieEngine = (*cpuTrie)(nil)
	_ trieEngine = (*gpuTrie)(nil)
)
