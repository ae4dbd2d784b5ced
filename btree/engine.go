package btree

import "github.com/warpkv/warpkv/engine"

// treeEngine is one backend of a Tree: the CPU engine (cpuTree, cpu.go) or the
// GPU engine (gpuTree, tree_gpu.go), which give the same answers and the
// same node arrays after the same batches. Batches that change the tree
// (build, insert, remove) are serialized by the Tree and never run beside
// a read; reads (lookup, rangeOf, ranges, state, snapshot) may run
// concurrently with each other. Batches are validated by the Tree:
// matching lengths, insert non-empty, remove, lookup and ranges non-empty
// on a non-empty tree.
type treeEngine interface {
	// build replaces the contents with the pairs (unsorted; the last
	// occurrence of a key wins).
	build(keys, values []uint64) (engine.Timings, error)
	// insert upserts the pairs.
	insert(keys, values []uint64) (engine.Timings, error)
	// remove deletes the keys, rebuilding the tree when it is underfull.
	remove(keys []uint64) (engine.Timings, error)
	// lookup writes each key's value and whether it is present.
	lookup(keys, values []uint64, found []bool) (engine.Timings, error)
	// rangeOf returns the pairs with lo <= key <= hi, at most limit.
	rangeOf(lo, hi uint64, limit int) (keys, values []uint64, err error)
	// ranges answers many half-open range queries [los[i], his[i]) into
	// into (nil: a new Result; see Tree.RangesInto).
	ranges(into *Result, los, his []uint64, limit int) (*Result, engine.Timings, error)
	// rangesDesc is ranges in descending key order (Tree.RangesDescInto).
	rangesDesc(into *Result, los, his []uint64, limit int) (*Result, engine.Timings, error)
	// state is the bookkeeping besides the node arrays.
	state() treeState
	// snapshot returns the node arrays in host memory, for Check and
	// the tests.
	snapshot() (store, error)
	// close frees the engine's memory.
	close() error
}

// treeState is the bookkeeping of a tree besides its node arrays.
type treeState struct {
	root   uint32 // nilNode when empty
	n      int    // keys
	leaves int    // live leaves
	freed  int    // allocated nodes of kind free
}
