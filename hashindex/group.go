package hashindex

import (
	"cmp"
	"slices"

	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/internal/reuse"
)

// Jobs is a batch of insert or delete jobs grouped by partition, the input
// of the partitioned insert and delete (DevInsert, DevDelete). The jobs of
// each partition that has any form one run, in batch order; runs are in
// partition order and run r is jobs [Starts[r], Starts[r+1]).
type Jobs struct {
	Hashes []uint64 // key hashes, partition order
	Locs   []uint32 // locations, partition order
	Order  []uint32 // batch index of each job: where its result goes
	Starts []uint32 // run offsets: Runs()+1 entries, the last Len()
}

// Len returns the number of jobs.
func (j Jobs) Len() int { return len(j.Hashes) }

// Runs returns the number of runs: the partitions that have jobs.
func (j Jobs) Runs() int { return len(j.Starts) - 1 }

// maxRuns bounds the runs of n jobs in parts partitions.
func maxRuns(n, parts int) int { return min(n, parts) }

// Group returns the jobs (hashes[i], locs[i]) grouped by partition,
// preserving batch order within each partition, in new slices. Cost: a
// stable counting sort, two passes over the batch on Options.Workers
// goroutines, plus a pass over the partitions (a comparison sort instead
// for batches much smaller than the partition count). It panics if the
// lengths differ.
func (ix *Index) Group(hashes []uint64, locs []uint32) Jobs {
	if len(hashes) != len(locs) {
		panic("hashindex: Group: lengths of hashes and locs differ")
	}
	n := len(hashes)
	j := Jobs{
		Hashes: make([]uint64, n), Locs: make([]uint32, n), Order: make([]uint32, n),
		Starts: make([]uint32, maxRuns(n, ix.geo.parts)+1),
	}
	var s groupScratch
	return groupJobs(ix.geo, ix.workers, hashes, locs, j, &s)
}

// groupScratch is reusable memory for groupJobs.
type groupScratch struct {
	counts []uint32
	idx    []uint32
}

// Grouping tuning.
const (
	groupMinChunk  = 1 << 15 // the fewest jobs a counting goroutine gets
	groupSortRatio = 8       // comparison sort when jobs * this < partitions
)

// groupJobs fills dst (Hashes, Locs, Order of len(hashes); Starts of at
// least maxRuns+1 entries) with the jobs grouped by partition and returns
// it with Starts cut to the runs found.
func groupJobs(g geometry, workers int, hashes []uint64, locs []uint32, dst Jobs, s *groupScratch) Jobs {
	if len(hashes)*groupSortRatio < g.parts {
		return groupBySort(g, hashes, locs, dst, s)
	}
	return groupByCount(g, workers, hashes, locs, dst, s)
}

// groupBySort groups a batch much smaller than the partition count: a
// stable sort of job indices by partition, O(n log n).
func groupBySort(g geometry, hashes []uint64, locs []uint32, dst Jobs, s *groupScratch) Jobs {
	idx := reuse.Resize(&s.idx, len(hashes))
	for i := range idx {
		idx[i] = uint32(i)
	}
	part := func(i uint32) int { return g.partition(g.primary(hashes[i])) }
	slices.SortStableFunc(idx, func(a, b uint32) int { return cmp.Compare(part(a), part(b)) })
	runs := dst.Starts[:0]
	for k, i := range idx {
		if k == 0 || part(i) != part(idx[k-1]) {
			runs = append(runs, uint32(k))
		}
		dst.Hashes[k], dst.Locs[k], dst.Order[k] = hashes[i], locs[i], i
	}
	dst.Starts = append(runs, uint32(len(hashes)))
	return dst
}

// groupByCount is a stable counting sort. Each of up to workers goroutines
// counts its chunk of the batch per partition; an exclusive scan in
// (partition, chunk) order turns the counts into write cursors and records
// the runs; each goroutine then scatters its chunk in order, so the sort
// is stable.
func groupByCount(g geometry, workers int, hashes []uint64, locs []uint32, dst Jobs, s *groupScratch) Jobs {
	n, parts := len(hashes), g.parts
	w := max(1, min(workers, n/groupMinChunk))
	cnt := reuse.Resize(&s.counts, w*parts)
	clear(cnt)
	chunk := (n + w - 1) / w
	par.Do(w, func(i int) {
		c := cnt[i*parts : (i+1)*parts]
		for _, h := range hashes[min(n, i*chunk):min(n, (i+1)*chunk)] {
			c[g.partition(g.primary(h))]++
		}
	})
	runs := dst.Starts[:0]
	sum := uint32(0)
	for p := range parts {
		before := sum
		for i := range w {
			c := cnt[i*parts+p]
			cnt[i*parts+p] = sum
			sum += c
		}
		if sum != before {
			runs = append(runs, before)
		}
	}
	dst.Starts = append(runs, sum)
	par.Do(w, func(i int) {
		c := cnt[i*parts : (i+1)*parts]
		lo, hi := min(n, i*chunk), min(n, (i+1)*chunk)
		for j := lo; j < hi; j++ {
			h := hashes[j]
			p := g.partition(g.primary(h))
			k := c[p]
			c[p]++
			dst.Hashes[k] = h
			dst.Locs[k] = locs[j]
			dst.Order[k] = uint32(j)
		}
	})
	return dst
}
