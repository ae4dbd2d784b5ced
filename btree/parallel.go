package btree

import (
	"sync"
	"sync/atomic"
)

// Grains: items handed to a goroutine at a time.
const (
	keyGrain   = 2048 // keys of a batch (search, lookups)
	groupGrain = 16   // touched nodes (merge and write)
)

// parallelFor calls fn on consecutive chunks of [0, n) of grain items,
// on up to workers goroutines that take chunks dynamically (so one heavy
// chunk, e.g. a skewed leaf, does not hold back the others). Cost: the sum
// of the fn calls, divided among the workers.
func parallelFor(workers, n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	w := min(workers, (n+grain-1)/grain)
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

// pieces returns how many nodes c entries are split into: one if they fit
// in a node of the given order, else enough nodes of at most fill entries.
func pieces(c, order, fill int) int {
	switch {
	case c == 0:
		return 0
	case c <= order:
		return 1
	}
	return (c + fill - 1) / fill
}

// share is the closed-form distribution of n items to p parts as even as
// possible (the first n%p parts get one more): it returns the first item
// of part q. Cost: O(1).
func share(n, p, q int) int {
	base, rem := n/p, n%p
	return q*base + min(q, rem)
}
