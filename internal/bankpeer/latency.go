package bankpeer

import (
	"math/bits"
	"time"
)

// latencySub is the buckets per power of two of a latency histogram: its
// quantiles are within 1/latencySub of an octave (about 9%).
const latencySub = 8

// latencies is a histogram of durations in nanoseconds: bucket (e, m)
// holds durations whose top bit is e and next three bits are m. The zero
// value is empty. Cost: 4 KiB; add is O(1) without allocation.
type latencies [64 * latencySub]uint64

// add counts one duration.
func (h *latencies) add(d time.Duration) {
	h[latencyBucket(uint64(max(d, 1)))]++
}

// latencyBucket returns the bucket of n > 0 nanoseconds.
func latencyBucket(n uint64) int {
	e := bits.Len64(n) - 1
	if e < 3 {
		return int(n) // 1 to 7 ns: a bucket each
	}
	return e*latencySub + int(n>>(e-3)&(latencySub-1))
}

// bucketTop returns the largest duration of bucket b.
func bucketTop(b int) time.Duration {
	e, m := b/latencySub, uint64(b%latencySub)
	if e < 3 {
		return time.Duration(b)
	}
	return time.Duration(((latencySub + m + 1) << (e - 3)) - 1)
}

// merge adds o's counts to h.
func (h *latencies) merge(o *latencies) {
	for i, c := range o {
		h[i] += c
	}
}

// quantile returns the upper bound of the bucket holding quantile q in
// [0, 1] of the counted durations (0 when none).
func (h *latencies) quantile(q float64) time.Duration {
	var n uint64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n-1)) + 1 // 1-based rank of the quantile
	var seen uint64
	for b, c := range h {
		if seen += c; seen >= rank {
			return bucketTop(b)
		}
	}
	return bucketTop(len(h) - 1)
}
