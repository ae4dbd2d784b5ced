package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers returns w, or GOMAXPROCS when w <= 0: the default worker count of
// an option left zero. Cost: O(1).
func Workers(w int) int {
	if w <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return w
}

// Parts returns how many parts n items split into when each part gets at
// least minPer items and there are at most workers parts: between 1 and
// workers (workers <= 0 means GOMAXPROCS). Cost: O(1).
func Parts(n, minPer, workers int) int {
	if minPer < 1 {
		minPer = 1
	}
	return max(1, min(Workers(workers), n/minPer))
}

// Do runs fn(0), ..., fn(w-1), each on its own goroutine (inline when w is
// 1), and waits for all of them. Cost: the slowest call, plus w goroutines.
func Do(w int, fn func(i int)) {
	if w <= 1 {
		if w == 1 {
			fn(0)
		}
		return
	}
	var wg sync.WaitGroup
	for i := range w {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

// Bound returns the first item of part i when [0, n) is cut into parts
// near-equal contiguous parts: i*n/parts (the last part ends at n). Cost:
// O(1).
func Bound(n, parts, i int) int { return int(int64(n) * int64(i) / int64(parts)) }

// Ranges cuts [0, n) into parts near-equal contiguous parts (part i is
// [Bound(n, parts, i), Bound(n, parts, i+1))) and runs fn(i, lo, hi) for
// each on its own goroutine (inline for one part), then waits. parts < 1
// counts as 1. Cost: the slowest part.
func Ranges(n, parts int, fn func(i, lo, hi int)) {
	parts = max(parts, 1)
	Do(parts, func(i int) { fn(i, Bound(n, parts, i), Bound(n, parts, i+1)) })
}

// For calls fn on the consecutive chunks [0, grain), [grain, 2*grain), ...
// of [0, n) (the last one shorter), on up to workers goroutines (<= 0:
// GOMAXPROCS) that take the chunks dynamically, so that one slow chunk does
// not hold back the others. With one chunk, or one worker, it runs inline.
// Cost: the sum of the fn calls divided among the workers.
func For(n, grain, workers int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	w := min(Workers(workers), (n+grain-1)/grain)
	if w <= 1 {
		fn(0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(grain))) - grain
				if lo >= n {
					return
				}
				fn(lo, min(lo+grain, n))
			}
		})
	}
	wg.Wait()
}
