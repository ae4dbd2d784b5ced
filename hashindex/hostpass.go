package hashindex

import "github.com/warpkv/warpkv/internal/par"

// Host-side passes over a batch's inputs and outputs, split over
// goroutines: large batches are memory-bound on the host, so every pass
// runs on up to Options.Workers goroutines, each taking at least
// hostParallelMin jobs.

// hostParts is the number of goroutines a host-side pass over n jobs
// runs on: up to workers, each taking at least hostParallelMin jobs.
func hostParts(n, workers int) int { return par.Parts(n, hostParallelMin, workers) }

// countRanges runs count over near-equal ranges of [0, n) on up to
// workers goroutines and returns the sum of what the calls return.
func countRanges(n, workers int, count func(lo, hi int) int) int {
	w := hostParts(n, workers)
	counts := make([]int, w)
	par.Ranges(n, w, func(i, lo, hi int) { counts[i] = count(lo, hi) })
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// copyHits copies src to dst (of equal length) on up to workers goroutines
// and returns how many of the locations are not NotFound.
func copyHits(dst, src []uint32, workers int) int {
	return countRanges(len(src), workers, func(lo, hi int) int {
		copy(dst[lo:hi], src[lo:hi])
		h := 0
		for _, l := range dst[lo:hi] {
			if l != NotFound {
				h++
			}
		}
		return h
	})
}

// countNot returns how many of v are not absent, counting on up to
// workers goroutines.
func countNot(v []uint32, absent uint32, workers int) int {
	return countRanges(len(v), workers, func(lo, hi int) int {
		c := 0
		for _, x := range v[lo:hi] {
			if x != absent {
				c++
			}
		}
		return c
	})
}

// foundFlags sets found[i] to flags[i] != 0 on up to workers goroutines
// and returns how many are set.
func foundFlags(found []bool, flags []uint32, workers int) int {
	return countRanges(len(flags), workers, func(lo, hi int) int {
		h := 0
		for k, f := range flags[lo:hi] {
			found[lo+k] = f != 0
			h += int(f & 1)
		}
		return h
	})
}

// firstNotFound returns the index of the first location that is NotFound,
// or -1, scanning on up to workers goroutines.
func firstNotFound(locs []uint32, workers int) int {
	n := len(locs)
	w := hostParts(n, workers)
	first := make([]int, w)
	par.Ranges(n, w, func(i, lo, hi int) {
		first[i] = -1
		for k, l := range locs[lo:hi] {
			if l == NotFound {
				first[i] = lo + k
				return
			}
		}
	})
	for _, f := range first {
		if f >= 0 {
			return f
		}
	}
	return -1
}
