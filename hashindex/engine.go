package hashindex

// engine is one backend of an Index. Calls are serialized by the Index;
// batches are non-empty and validated. Slices an engine returns are its
// scratch, valid until its next call.
type engine interface {
	// search writes the location of each hash, or NotFound, to out.
	search(hashes []uint64, out []uint32) error
	// insert applies the jobs and returns one result per job in batch
	// order (see insertResult).
	insert(hashes []uint64, locs []uint32) ([]uint64, error)
	// remove applies the delete jobs and returns one flag per job in batch
	// order: 1 if the cell was found and cleared.
	remove(hashes []uint64, locs []uint32) ([]uint32, error)
	// snapshot returns a copy of the table.
	snapshot() ([]uint32, error)
	// reset empties the table.
	reset() error
	// close frees the engine's memory.
	close() error
}
