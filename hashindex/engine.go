package hashindex

// indexEngine is one backend of an Index: the CPU engine (cuckoo.go) or
// the GPU engine (cuckoo_gpu.go), which keep the same table word for word.
// Calls are serialized by the Index; batches are non-empty and validated. Slices an engine returns or hands
// out are its scratch, valid until its next call.
type indexEngine interface {
	// search writes the location of each hash, or NotFound, to out, and
	// returns how many were found.
	search(hashes []uint64, out []uint32) (hits int, err error)
	// insert applies the jobs and hands their results (see insertResult)
	// to done in batch order, as consecutive ranges: done(first, r) gets
	// the results of jobs [first, first+len(r)), r valid during the call.
	insert(hashes []uint64, locs []uint32, done func(first int, results []uint64)) error
	// remove applies the delete jobs and hands one flag per job to done as
	// insert does its results: 1 if the cell was found and cleared.
	remove(hashes []uint64, locs []uint32, done func(first int, found []uint32)) error
	// searchStaged is search of the first n jobs of st into st.out.
	searchStaged(st *Staging, n int) (hits int, err error)
	// insertStaged is insert of the first n jobs of st, the results in
	// st.results. It calls check, if not nil, before changing the table,
	// and fails with its error.
	insertStaged(st *Staging, n int, check func() error, done func(first int, results []uint64)) error
	// removeStaged is remove of the first n jobs of st, the flags in
	// st.out (also handed to done when not nil), and returns how many
	// deletes found their cell.
	removeStaged(st *Staging, n int, done func(first int, found []uint32)) (hits int, err error)
	// updateStaged is removeStaged of jobs [0, dels) of st, then
	// insertStaged of jobs [dels, dels+ins) (their locations already
	// checked), handing the insert results to done with first counting
	// from job dels, and returns how many deletes found their cell.
	// st.Out() is scratch.
	updateStaged(st *Staging, dels, ins int, done func(first int, results []uint64)) (hits int, err error)
	// snapshot returns a copy of the table.
	snapshot() ([]uint32, error)
	// reset empties the table.
	reset() error
	// close frees the engine's memory.
	close() error
}
