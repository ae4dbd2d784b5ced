package art

import (
	"sync/atomic"

	"github.com/warpkv/warpkv/internal/par"
)

// queryCheckMin is the fewest queries one worker checks.
const queryCheckMin = 1 << 13

// firstLongBound returns the index of the first query with a lower bound
// longer than MaxKeyLen or an upper bound longer than MaxKeyLen+1, or -1,
// on all cores for large batches: a GPU ranges call of 64Ki queries spent
// 0.31 ms outside the engine's timed part on the H200 host
// (BenchmarkGPUWholeCalls at 100M keys: 1.28 ms a call, 0.97 ms in the
// engine), where this check was the one loop over the batch (48 bytes of
// slice headers a query) on one goroutine. Cost: one parallel pass over
// the queries' slice headers.
func firstLongBound(qs []Query) int {
	first := atomic.Int64{}
	first.Store(int64(len(qs)))
	par.Ranges(len(qs), par.Parts(len(qs), queryCheckMin, 0), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			if len(qs[i].Lo) > MaxKeyLen || len(qs[i].Hi) > MaxKeyLen+1 {
				for {
					f := first.Load()
					if int64(i) >= f || first.CompareAndSwap(f, int64(i)) {
						return
					}
				}
			}
		}
	})
	if f := int(first.Load()); f < len(qs) {
		return f
	}
	return -1
}
