package hashindex

import (
	"fmt"
	"time"

	"github.com/warpkv/warpkv/engine"
)

// UpdateStaged applies an update round in one call: DeleteStaged of jobs
// [0, dels) of st, then InsertStaged of jobs [dels, dels+ins) of st. It
// appends to dropped, in job order, every location the inserts made the
// index stop holding, Dropped.Job counting from the first insert job
// (dels), and counts in Stats as the two calls do. A location NotFound
// among the inserts fails the call with the table unchanged. It
// overwrites st.Out(), whose contents are then unspecified.
//
// Cost: on the GPU engine, a round of up to SmallUpdateMax jobs is one
// kernel launch and one stream synchronization: the kernel reads the jobs
// straight from st's mapped memory and writes the insert results back
// there, with no transfer, no grouping pass and no event (hix_update_small
// in hashindex.cu); a larger round is DeleteStaged and InsertStaged. On
// the CPU engine the two calls' work on st's slices. Either way, a host
// pass over the insert locations first (the NotFound check) and one over
// the insert results when some insert dropped a location.
func (ix *Index) UpdateStaged(st *Staging, dels, ins int, dropped []Dropped) ([]Dropped, error) {
	if dels < 0 || ins < 0 {
		return dropped, fmt.Errorf("hashindex: update staged: %d deletes and %d inserts", dels, ins)
	}
	n := dels + ins
	e, err := ix.lockStaged("update staged", st, n)
	if err != nil {
		return dropped, err
	}
	defer engine.Unlock(&ix.Facade)
	if n == 0 {
		return dropped, nil
	}
	if i := firstNotFound(st.locs[dels:n], ix.workers); i >= 0 {
		return dropped, fmt.Errorf("hashindex: update staged: insert job %d has location NotFound", i)
	}
	t0 := time.Now()
	t := dropTally{dropped: dropped, workers: ix.workers}
	hits, err := e.updateStaged(st, dels, ins, t.add)
	if err != nil {
		return t.dropped, fmt.Errorf("hashindex: update staged of %d deletes and %d inserts: %w", dels, ins, err)
	}
	ix.record("update staged", n, t0)
	ix.stats.Deletes += uint64(dels)
	ix.stats.Deleted += uint64(hits)
	ix.stats.Entries -= uint64(hits)
	ix.countInserts(ins, t)
	return t.dropped, nil
}

// SmallUpdateMax is the largest round UpdateStaged applies with one
// kernel launch on the GPU engine; larger rounds take a delete and an
// insert call, which were measured faster from 2048 jobs (update_gpu.go).
const SmallUpdateMax = smallUpdateMax

func (c *cpuEngine) updateStaged(st *Staging, dels, ins int, done func(int, []uint64)) (int, error) {
	hits := 0
	if dels > 0 {
		found := st.out[:dels]
		c.removeInto(st.hashes[:dels], st.locs[:dels], found)
		hits = countNot(found, 0, c.workers)
	}
	if ins > 0 {
		n := dels + ins
		res := st.results[dels:n] // after the flags: bytes [8 dels, 8 n) of the output area
		c.insertInto(st.hashes[dels:n], st.locs[dels:n], res)
		done(0, res)
	}
	return hits, nil
}
