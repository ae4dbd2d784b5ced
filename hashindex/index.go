package hashindex

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// Index is a cuckoo hash index on one engine. Its methods are safe for
// concurrent use; calls are serialized. It implements engine.Reporter
// through its embedded engine.Facade (Backend, Reason, LastBatch, Close);
// after Close every call returns an error matching engine.ErrClosed.
//
// LastBatch is the time of the most recent host-level call (Search,
// Insert, Delete and their staged forms; Dev* calls are not recorded): its
// operation, its jobs and its wall time, reported as Total and as Work.
// The phases are not split: the GPU engine pipelines the transfers and the
// kernels of a call's chunks over three streams, and recording events
// around them would cost more than the kernels of a small batch.
type Index struct {
	engine.Facade[indexEngine]
	geo     geometry
	maxDisp uint32
	workers int
	gpu     *gpuEngine // nil on the CPU engine

	// Searches that hold only the facade's read lock count here:
	// sharedSearches the jobs of SearchShared calls (Stats.Shared),
	// persistSearches those of PersistentSearch calls (persist_gpu.go),
	// readHits the hits of both.
	sharedSearches, persistSearches, readHits atomic.Uint64

	// Guarded by the facade's lock:
	stats    Stats
	stagings map[*Staging]struct{} // not yet freed, freed by Close
}

var _ engine.Reporter = (*Index)(nil)

// Stats counts the work of an index's host-level calls (Dev* calls are not
// counted).
type Stats struct {
	Entries    uint64 // cells in use
	Searches   uint64 // search jobs
	Shared     uint64 // of Searches, the jobs of SearchShared calls on the CPU engine
	Hits       uint64 // searches that found a location
	Inserts    uint64 // insert jobs
	Overwrites uint64 // inserts that replaced a location (dropped as Overwritten)
	Displaced  uint64 // locations dropped by exhausted displacement chains
	Deletes    uint64 // delete jobs
	Deleted    uint64 // deletes that found and cleared their cell
}

// Open returns an empty index configured by opts, on the engine opts.GPU
// or opts.Device selects (engine.Place: auto, cpu, gpu or gpu:N; "" means
// WARPKV_DEVICE, else auto). Close it to free the table and, when the
// index opened it, the device. Cost: the table's allocation (64 bytes a
// bucket); on the GPU, kernels compile on first use.
func Open(opts Options) (*Index, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	workers := par.Workers(r.workers)
	ix := &Index{geo: r.geo, maxDisp: r.maxDisp, workers: workers}
	err = engine.Open(&ix.Facade, engine.Spec[indexEngine]{
		Name: "hashindex", Device: opts.Device, GPU: opts.GPU,
		Start: func(p engine.Placement) (indexEngine, error) {
			if p.Backend != gpu.BackendGPU {
				return newCPUEngine(r, workers), nil
			}
			e, err := newGPUEngine(r, p.Device, workers)
			if err != nil {
				return nil, fmt.Errorf("hashindex: open on %s: %w", p.Device, err)
			}
			ix.gpu = e
			return e, nil
		},
		Free: func(e indexEngine) error {
			var errs []error
			for st := range ix.stagings {
				errs = append(errs, st.free())
			}
			return errors.Join(append(errs, e.close())...)
		},
	})
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// record sets the timings of a host-level call of n jobs that started at
// t0. Cost: O(1).
func (ix *Index) record(op string, n int, t0 time.Time) {
	d := time.Since(t0)
	engine.Record(&ix.Facade, engine.Timings{Op: op, Items: n, Work: d, Total: d})
}

// Buckets returns the number of buckets (a power of two).
func (ix *Index) Buckets() int { return ix.geo.buckets }

// Capacity returns the number of cells, Buckets()*8.
func (ix *Index) Capacity() int { return ix.geo.buckets * CellsPerBucket }

// PartitionBits returns log2 of the buckets per partition.
func (ix *Index) PartitionBits() int { return int(ix.geo.pbits) }

// Partitions returns the number of partitions.
func (ix *Index) Partitions() int { return ix.geo.parts }

// Partition returns the partition of the key with hash h.
func (ix *Index) Partition(h uint64) int { return ix.geo.partition(ix.geo.primary(h)) }

// MaxDisplacements returns the displacement bound of an insert.
func (ix *Index) MaxDisplacements() int { return int(ix.maxDisp) }

// Search writes to out[i] the location of the key with hash hashes[i], or
// NotFound. It sees every insert and delete of earlier calls. Cost: up to
// two bucket reads per job; on the GPU a copy of the batch into pinned
// memory, one transfer each way and a kernel per chunk of up to 4 Mi jobs
// (chunks pipelined) and a copy of the results out (SearchStaged skips
// both copies); on the CPU, parallel over goroutines.
func (ix *Index) Search(hashes []uint64, out []uint32) error {
	n := len(hashes)
	if err := checkSearch("search", n, out); err != nil || n == 0 {
		return err
	}
	e, err := engine.Lock(&ix.Facade, "search")
	if err != nil {
		return err
	}
	defer engine.Unlock(&ix.Facade)
	t0 := time.Now()
	hits, err := e.search(hashes, out[:n])
	if err != nil {
		return fmt.Errorf("hashindex: search of %d jobs: %w", n, err)
	}
	ix.record("search", n, t0)
	ix.stats.Searches += uint64(n)
	ix.stats.Hits += uint64(hits)
	return nil
}

// checkSearch checks a search of n jobs into out for op: room for every
// result, and a batch size the engines take.
func checkSearch(op string, n int, out []uint32) error {
	if len(out) < n {
		return fmt.Errorf("hashindex: %s: %d outputs for %d jobs", op, len(out), n)
	}
	return checkBatch(op, n)
}

// SearchShared is Search for callers that search concurrently with each
// other. On the CPU engine SearchShared calls hold only the index's read
// lock, so they run in parallel on their callers' goroutines and are
// excluded only from updates, resets and Close (which may move cells: a
// present key is always found, as with Search); large batches still spread
// over the engine's workers. It counts in Stats but does not record
// LastBatch. On the GPU engine it is Search (calls serialized); Shared
// says which. Cost on the CPU: a read lock (an atomic add on the index's
// lock word, shared by every caller), up to two bucket reads per job and
// two atomic adds for the stats.
func (ix *Index) SearchShared(hashes []uint64, out []uint32) error {
	if !ix.Shared() {
		return ix.Search(hashes, out)
	}
	n := len(hashes)
	if err := checkSearch("search shared", n, out); err != nil || n == 0 {
		return err
	}
	eng, err := engine.RLock(&ix.Facade, "search shared")
	if err != nil {
		return err
	}
	defer engine.RUnlock(&ix.Facade)
	hits, err := eng.search(hashes, out[:n])
	if err != nil {
		return fmt.Errorf("hashindex: search shared of %d jobs: %w", n, err)
	}
	ix.sharedSearches.Add(uint64(n))
	ix.readHits.Add(uint64(hits))
	return nil
}

// Shared reports whether SearchShared calls run in parallel (the CPU
// engine) rather than one at a time (the GPU engine). Cost: O(1).
func (ix *Index) Shared() bool { return ix.gpu == nil }

// Insert indexes location locs[i] under hash hashes[i], for every i in
// batch order (a key inserted twice keeps the later location), and appends
// to dropped, in job order, every location the index stopped holding:
// replaced ones (Overwritten) and those displacement could not place
// (Displaced). Locations must not be NotFound. Cost: on the GPU a copy of
// the batch into pinned memory (InsertStaged skips it), one transfer each
// way per chunk of up to 4 Mi jobs (chunks pipelined), a stable sort of
// the jobs by partition on the device and a kernel with one 8-lane unit
// per partition; on the CPU a stable counting sort by partition and
// partitions spread over goroutines.
func (ix *Index) Insert(hashes []uint64, locs []uint32, dropped []Dropped) ([]Dropped, error) {
	n := len(hashes)
	if err := checkJobs("insert", hashes, locs); err != nil {
		return dropped, err
	}
	if i := firstNotFound(locs, ix.workers); i >= 0 {
		return dropped, fmt.Errorf("hashindex: insert: job %d has location NotFound", i)
	}
	if n == 0 {
		return dropped, nil
	}
	e, err := engine.Lock(&ix.Facade, "insert")
	if err != nil {
		return dropped, err
	}
	defer engine.Unlock(&ix.Facade)
	return ix.recordInsert("insert", n, dropped, func(decode func(int, []uint64)) error {
		return e.insert(hashes, locs, decode)
	})
}

// recordInsert runs an engine insert of n jobs, decoding each chunk's
// results into dropped as the engine delivers them, then updates the
// stats. Callers hold the index's lock. Cost: one pass over the results.
func (ix *Index) recordInsert(op string, n int, dropped []Dropped, run func(decode func(first int, res []uint64)) error) ([]Dropped, error) {
	t0 := time.Now()
	t := dropTally{dropped: dropped, workers: ix.workers}
	if err := run(t.add); err != nil {
		return t.dropped, fmt.Errorf("hashindex: %s of %d jobs: %w", op, n, err)
	}
	ix.record(op, n, t0)
	ix.countInserts(n, t)
	return t.dropped, nil
}

// dropTally collects the drops of an insert call's results as the engine
// delivers them (add), counting overwrites and displacements.
type dropTally struct {
	dropped    []Dropped
	over, disp int
	workers    int
}

// add decodes the results of jobs first, first+1, ... Cost: one pass.
func (t *dropTally) add(first int, res []uint64) {
	var o, d int
	t.dropped, o, d = decodeResults(res, first, t.dropped, t.workers)
	t.over += o
	t.disp += d
}

// countInserts counts n insert jobs whose drops t tallied in the stats.
// Callers hold the index's lock.
func (ix *Index) countInserts(n int, t dropTally) {
	ix.stats.Inserts += uint64(n)
	ix.stats.Overwrites += uint64(t.over)
	ix.stats.Displaced += uint64(t.disp)
	ix.stats.Entries += uint64(n - t.over - t.disp)
}

// Delete clears, for every i in batch order, the cell holding both the
// signature of hashes[i] and location locs[i], and sets found[i] to
// whether there was one. Cost: as Insert.
func (ix *Index) Delete(hashes []uint64, locs []uint32, found []bool) error {
	n := len(hashes)
	if err := checkJobs("delete", hashes, locs); err != nil {
		return err
	}
	if len(found) < n {
		return fmt.Errorf("hashindex: delete: %d outputs for %d jobs", len(found), n)
	}
	if n == 0 {
		return nil
	}
	e, err := engine.Lock(&ix.Facade, "delete")
	if err != nil {
		return err
	}
	defer engine.Unlock(&ix.Facade)
	t0 := time.Now()
	hits := 0
	err = e.remove(hashes, locs, func(first int, flags []uint32) {
		hits += foundFlags(found[first:first+len(flags)], flags, ix.workers)
	})
	if err != nil {
		return fmt.Errorf("hashindex: delete of %d jobs: %w", n, err)
	}
	ix.recordDelete("delete", n, hits, t0)
	return nil
}

// recordDelete records a delete call of n jobs, hits of which found their
// cell, that started at t0: its timings and the stats. Callers hold the index's lock.
func (ix *Index) recordDelete(op string, n, hits int, t0 time.Time) {
	ix.record(op, n, t0)
	ix.stats.Deletes += uint64(n)
	ix.stats.Deleted += uint64(hits)
	ix.stats.Entries -= uint64(hits)
}

// Stats returns the counters of the host-level calls so far.
func (ix *Index) Stats() Stats {
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	st := ix.stats
	st.Shared = ix.sharedSearches.Load()
	st.Searches += st.Shared + ix.persistSearches.Load()
	st.Hits += ix.readHits.Load()
	return st
}

// Snapshot returns a copy of the table: Buckets()*16 words, bucket b's 8
// signatures at [16b, 16b+8) and their locations at [16b+8, 16b+16). Cost:
// a copy of the table (from the device on the GPU engine).
func (ix *Index) Snapshot() ([]uint32, error) {
	e, err := engine.Lock(&ix.Facade, "snapshot")
	if err != nil {
		return nil, err
	}
	defer engine.Unlock(&ix.Facade)
	t, err := e.snapshot()
	if err != nil {
		return nil, fmt.Errorf("hashindex: snapshot: %w", err)
	}
	return t, nil
}

// Reset empties the table and zeroes the stats. Cost: a clear of the
// table.
func (ix *Index) Reset() error {
	e, err := engine.Lock(&ix.Facade, "reset")
	if err != nil {
		return err
	}
	defer engine.Unlock(&ix.Facade)
	if err := e.reset(); err != nil {
		return fmt.Errorf("hashindex: reset: %w", err)
	}
	ix.stats = Stats{}
	ix.sharedSearches.Store(0)
	ix.persistSearches.Store(0)
	ix.readHits.Store(0)
	return nil
}

// checkJobs checks that a batch of update jobs has one location per hash
// and fits the limits.
func checkJobs(op string, hashes []uint64, locs []uint32) error {
	if len(hashes) != len(locs) {
		return fmt.Errorf("hashindex: %s: %d hashes but %d locations", op, len(hashes), len(locs))
	}
	return checkBatch(op, len(hashes))
}

// checkBatch checks a batch size against MaxBatch.
func checkBatch(op string, n int) error {
	if n > MaxBatch {
		return fmt.Errorf("hashindex: %s: %d jobs, at most %d a call", op, n, MaxBatch)
	}
	return nil
}
