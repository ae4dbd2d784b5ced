package hashindex

// Host-side passes over a batch's inputs and outputs, split over
// goroutines: large batches are memory-bound on the host, so every pass
// runs on up to Options.Workers goroutines, each taking at least
// hostParallelMin jobs.

// forRanges splits [0, n) into up to workers contiguous ranges of at least
// hostParallelMin elements and calls fn on each, on its own goroutine when
// there are several, and waits.
func forRanges(n, workers int, fn func(lo, hi int)) {
	w := max(1, min(workers, n/hostParallelMin))
	parallel(w, func(i int) { fn(i*n/w, (i+1)*n/w) })
}

// copyHits copies src to dst (of equal length) on up to workers goroutines
// and returns how many of the locations are not NotFound.
func copyHits(dst, src []uint32, workers int) int {
	n := len(src)
	w := max(1, min(workers, n/hostParallelMin))
	hits := make([]int, w)
	parallel(w, func(i int) {
		lo, hi := i*n/w, (i+1)*n/w
		copy(dst[lo:hi], src[lo:hi])
		h := 0
		for _, l := range dst[lo:hi] {
			if l != NotFound {
				h++
			}
		}
		hits[i] = h
	})
	total := 0
	for _, h := range hits {
		total += h
	}
	return total
}

// countNot returns how many of v are not absent, counting on up to
// workers goroutines.
func countNot(v []uint32, absent uint32, workers int) int {
	n := len(v)
	w := max(1, min(workers, n/hostParallelMin))
	counts := make([]int, w)
	parallel(w, func(i int) {
		c := 0
		for _, x := range v[i*n/w : (i+1)*n/w] {
			if x != absent {
				c++
			}
		}
		counts[i] = c
	})
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// foundFlags sets found[i] to flags[i] != 0 on up to workers goroutines
// and returns how many are set.
func foundFlags(found []bool, flags []uint32, workers int) int {
	n := len(flags)
	w := max(1, min(workers, n/hostParallelMin))
	hits := make([]int, w)
	parallel(w, func(i int) {
		lo, hi := i*n/w, (i+1)*n/w
		h := 0
		for k, f := range flags[lo:hi] {
			found[lo+k] = f != 0
			h += int(f & 1)
		}
		hits[i] = h
	})
	total := 0
	for _, h := range hits {
		total += h
	}
	return total
}

// firstNotFound returns the index of the first location that is NotFound,
// or -1, scanning on up to workers goroutines.
func firstNotFound(locs []uint32, workers int) int {
	n := len(locs)
	w := max(1, min(workers, n/hostParallelMin))
	first := make([]int, w)
	parallel(w, func(i int) {
		lo, hi := i*n/w, (i+1)*n/w
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
