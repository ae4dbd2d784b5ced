package hashindex

import (
	"sync/atomic"

	"github.com/warpkv/warpkv/internal/hugepages"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/internal/reuse"
)

// CPU engine tuning.
const (
	cpuParallelMin = 1 << 13 // batches smaller than this run on one goroutine
	cpuSearchChunk = 1 << 12 // searches per goroutine task
	cpuRunsPerTask = 16      // tasks per worker when spreading partition runs
)

// cpuEngine keeps the table in a Go slice and applies batches on
// goroutines with the same per-job algorithm as the kernels of
// hashindex.cu, so its tables equal the GPU's word for word.
type cpuEngine struct {
	geo     geometry
	maxDisp uint32
	workers int
	table   []uint32

	jobs    Jobs // grouping scratch
	group   groupScratch
	results []uint64
	found   []uint32
	// sinkOnes counts warm calls whose loads summed to one:
	// a use of what they read, so that the compiler keeps them.
	sinkOnes atomic.Uint32
}

func newCPUEngine(r resolved, workers int) *cpuEngine {
	table := make([]uint32, r.geo.words())
	hugepages.Advise(table)
	return &cpuEngine{geo: r.geo, maxDisp: r.maxDisp, workers: workers, table: table}
}

// bucket returns the 16 words of bucket b.
func (c *cpuEngine) bucket(b uint32) []uint32 {
	i := int(b) * BucketWords
	return c.table[i : i+BucketWords : i+BucketWords]
}

// matchMask returns the cells of bucket k whose signature is sig (bit i:
// cell i), as the kernels' ballots do.
func matchMask(k []uint32, sig uint32) uint32 {
	m := uint32(0)
	for i, s := range k[:CellsPerBucket] {
		if s == sig {
			m |= 1 << i
		}
	}
	return m
}

// lowestCell returns the index of the lowest set bit of a non-zero mask
// (__ffs(m) - 1 in the kernels).
func lowestCell(m uint32) uint32 {
	for i := uint32(0); ; i++ {
		if m>>i&1 != 0 {
			return i
		}
	}
}

// insertOne applies one insert job (see hix_insert) and returns its result.
func (c *cpuEngine) insertOne(h uint64, loc uint32) uint64 {
	g := c.geo
	sig := signature(h)
	b1 := g.primary(h)
	b2 := g.alternate(b1, sig)
	k1, k2 := c.bucket(b1), c.bucket(b2)
	for _, k := range [2][]uint32{k1, k2} {
		if m := matchMask(k, sig); m != 0 {
			i := lowestCell(m)
			old := k[CellsPerBucket+i]
			k[CellsPerBucket+i] = loc
			return insertResult(Overwritten, old)
		}
	}
	for _, k := range [2][]uint32{k1, k2} {
		if i, ok := nearestFree(matchMask(k, 0), preferred(sig)); ok {
			k[i], k[CellsPerBucket+i] = sig, loc
			return resultPlaced
		}
	}
	// Cuckoo displacement: put the entry at its preferred cell of b, move
	// the victim to its alternate bucket, repeat while that one is full.
	cs, cl, b := sig, loc, b1
	for range c.maxDisp {
		k := c.bucket(b)
		p := preferred(cs)
		vs, vl := k[p], k[CellsPerBucket+p]
		k[p], k[CellsPerBucket+p] = cs, cl
		cs, cl = vs, vl
		b = g.alternate(b, cs)
		k = c.bucket(b)
		if i, ok := nearestFree(matchMask(k, 0), preferred(cs)); ok {
			k[i], k[CellsPerBucket+i] = cs, cl
			return resultPlaced
		}
	}
	return insertResult(Displaced, cl)
}

// removeOne applies one delete job (see hix_delete): it clears the cell of
// b1, else b2, holding both the signature and the location, and returns 1
// if there was one.
func (c *cpuEngine) removeOne(h uint64, loc uint32) uint32 {
	sig := signature(h)
	b1 := c.geo.primary(h)
	for _, b := range [2]uint32{b1, c.geo.alternate(b1, sig)} {
		k := c.bucket(b)
		for i := range CellsPerBucket {
			if k[i] == sig && k[CellsPerBucket+i] == loc {
				k[i], k[CellsPerBucket+i] = 0, 0
				return 1
			}
		}
	}
	return 0
}

// searchOne returns the location of hash h, or NotFound (see hix_search).
func (c *cpuEngine) searchOne(h uint64) uint32 {
	sig := signature(h)
	b1 := c.geo.primary(h)
	for _, b := range [2]uint32{b1, c.geo.alternate(b1, sig)} {
		k := c.bucket(b)
		if m := matchMask(k, sig); m != 0 {
			return k[CellsPerBucket+lowestCell(m)]
		}
	}
	return NotFound
}

func (c *cpuEngine) search(hashes []uint64, out []uint32) (int, error) {
	n := len(hashes)
	if c.workers == 1 || n < cpuParallelMin {
		return c.searchRange(hashes, out), nil
	}
	tasks := (n + cpuSearchChunk - 1) / cpuSearchChunk
	var next, hits atomic.Int64
	par.Do(min(c.workers, tasks), func(int) {
		for t := int(next.Add(1) - 1); t < tasks; t = int(next.Add(1) - 1) {
			lo, hi := t*cpuSearchChunk, min(n, (t+1)*cpuSearchChunk)
			hits.Add(int64(c.searchRange(hashes[lo:hi], out[lo:hi])))
		}
	})
	return int(hits.Load()), nil
}

// searchGroup is how many jobs searchRange and apply start the memory
// loads of (warm) before they run them.
const searchGroup = 16

// warm loads the first word of both buckets of every hash: independent
// loads whose memory misses the processor overlaps, so that the jobs run
// next find their buckets in the cache. It changes nothing.
func (c *cpuEngine) warm(hashes []uint64) {
	var sink uint32
	for _, h := range hashes {
		b1 := c.geo.primary(h)
		sink += c.table[int(b1)*BucketWords] + c.table[int(c.geo.alternate(b1, signature(h)))*BucketWords]
	}
	if sink == 1 { // uses the loads, so they are kept; almost never true
		c.sinkOnes.Add(1)
	}
}

// searchRange searches hashes into out and returns how many were found.
// It takes them in groups of searchGroup: first one load of each job's
// two buckets, independent loads the processor overlaps (a table larger
// than the caches costs a memory round trip per bucket), then the
// searches, whose buckets are in the cache by then. On the 2-core
// development VM, 2^20 buckets (64 MiB), half the keys present, this took
// a batch of 64Ki searches from 9.5-10.2 to 17.7-21.4 M/s and one of 1Ki
// from 11.7-15.8 to 19.1-29.5 M/s (BenchmarkCPUSearch).
func (c *cpuEngine) searchRange(hashes []uint64, out []uint32) int {
	hits := 0
	for lo := 0; lo < len(hashes); lo += searchGroup {
		group := hashes[lo:min(lo+searchGroup, len(hashes))]
		c.warm(group)
		for j, h := range group {
			l := c.searchOne(h)
			out[lo+j] = l
			if l != NotFound {
				hits++
			}
		}
	}
	return hits
}

func (c *cpuEngine) insert(hashes []uint64, locs []uint32, done func(int, []uint64)) error {
	res := reuse.Resize(&c.results, len(hashes))
	c.insertInto(hashes, locs, res)
	done(0, res)
	return nil
}

func (c *cpuEngine) remove(hashes []uint64, locs []uint32, done func(int, []uint32)) error {
	found := reuse.Resize(&c.found, len(hashes))
	c.removeInto(hashes, locs, found)
	done(0, found)
	return nil
}

func (c *cpuEngine) searchStaged(st *Staging, n int) (int, error) {
	return c.search(st.hashes[:n], st.out[:n])
}

func (c *cpuEngine) insertStaged(st *Staging, n int, check func() error, done func(int, []uint64)) error {
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	res := st.results[:n]
	c.insertInto(st.hashes[:n], st.locs[:n], res)
	done(0, res)
	return nil
}

func (c *cpuEngine) removeStaged(st *Staging, n int, done func(int, []uint32)) (int, error) {
	found := st.out[:n]
	c.removeInto(st.hashes[:n], st.locs[:n], found)
	if done != nil {
		done(0, found)
	}
	return countNot(found, 0, c.workers), nil
}

// insertInto applies insert jobs, job j's result to res[j].
func (c *cpuEngine) insertInto(hashes []uint64, locs []uint32, res []uint64) {
	c.apply(hashes, locs, func(j int, h uint64, loc uint32) { res[j] = c.insertOne(h, loc) })
}

// removeInto applies delete jobs, job j's flag to found[j].
func (c *cpuEngine) removeInto(hashes []uint64, locs []uint32, found []uint32) {
	c.apply(hashes, locs, func(j int, h uint64, loc uint32) { found[j] = c.removeOne(h, loc) })
}

// apply calls fn(batch index, hash, loc) for every job such that the jobs of
// one partition run in batch order on one goroutine. Small batches run in
// batch order on the caller's goroutine (equivalent, as partitions are
// disjoint); large ones are grouped by partition and the runs of
// partitions spread over the workers.
func (c *cpuEngine) apply(hashes []uint64, locs []uint32, fn func(j int, h uint64, loc uint32)) {
	n := len(hashes)
	if c.workers == 1 || n < cpuParallelMin {
		for lo := 0; lo < n; lo += searchGroup {
			hi := min(lo+searchGroup, n)
			c.warm(hashes[lo:hi])
			for j := lo; j < hi; j++ {
				fn(j, hashes[j], locs[j])
			}
		}
		return
	}
	c.jobs = Jobs{
		Hashes: reuse.Resize(&c.jobs.Hashes, n), Locs: reuse.Resize(&c.jobs.Locs, n), Order: reuse.Resize(&c.jobs.Order, n),
		Starts: reuse.Resize(&c.jobs.Starts, maxRuns(n, c.geo.parts)+1),
	}
	jobs := groupJobs(c.geo, c.workers, hashes, locs, c.jobs, &c.group)
	runs := jobs.Runs()
	per := max(1, runs/(c.workers*cpuRunsPerTask))
	var next atomic.Int64
	par.Do(c.workers, func(int) {
		for {
			r0 := int(next.Add(int64(per))) - per
			if r0 >= runs {
				return
			}
			for k := jobs.Starts[r0]; k < jobs.Starts[min(runs, r0+per)]; k++ {
				fn(int(jobs.Order[k]), jobs.Hashes[k], jobs.Locs[k])
			}
		}
	})
}

func (c *cpuEngine) snapshot() ([]uint32, error) { return append([]uint32(nil), c.table...), nil }

func (c *cpuEngine) reset() error {
	clear(c.table)
	return nil
}

func (c *cpuEngine) close() error {
	c.table = nil
	return nil
}
