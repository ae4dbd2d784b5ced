package art

import "github.com/warpkv/warpkv/engine"

// backend is one engine of a Tree: the CPU engine (cpu.go) or the GPU
// engine (engine_gpu.go). Calls are serialized by the Tree (lookups and ranges
// may run concurrently with each other, never with a batch that changes
// the tree); batches are validated. Both engines give the same answers and,
// after the same batches, the same layout word for word.
type backend interface {
	// build replaces the tree with the batch's pairs (last occurrence wins).
	build(kb Keys, vals []uint64) error
	// insert upserts the batch (last occurrence wins) into a non-empty
	// tree and returns how many keys were new.
	insert(kb Keys, vals []uint64) (int, error)
	// update replaces the values of present keys (last occurrence wins);
	// found[i] says whether key i is present.
	update(kb Keys, vals []uint64, found []bool) error
	// lookup sets values[i] and found[i] for each key.
	lookup(kb Keys, vals []uint64, found []bool) error
	// remove deletes the keys and returns how many were present.
	remove(kb Keys) (int, error)
	// ranges answers range queries, ascending or descending, into into's
	// arrays where they have the room (nil: a new Result).
	ranges(into *Result, qs []Query, limit int, desc bool) (*Result, error)
	// size is the number of keys; width the root table's.
	size() int
	width() int
	// snapshot returns the tree as a store (the CPU engine's own; a copy of
	// the GPU engine's device arrays).
	snapshot() (*store, error)
	// lastBatch is the breakdown of the latest batch.
	lastBatch() engine.Timings
	close() error
}
