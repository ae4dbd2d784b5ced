package art

import (
	"sync"
	"sync/atomic"
)

// Grains: items handed to a goroutine at a time.
const (
	keyGrain  = 1024 // keys of a batch (walks, lookups)
	nodeGrain = 64   // touched nodes, segments, range queries
)

// parallelFor calls fn on consecutive chunks of [0, n) of grain items, on
// up to workers goroutines that take chunks dynamically. Cost: the sum of
// the fn calls, divided among the workers.
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
