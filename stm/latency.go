package stm

import (
	"fmt"
	"math/bits"
	"time"
)

// LatencySub is the buckets per power of two of a Latency histogram: a
// quantile it reports is within 1/LatencySub of an octave (12.5%) of the
// true value, never below it.
const LatencySub = 8

// LatencyBuckets is the number of buckets of a Latency histogram: every
// duration up to 2^63 ns has one. The GPU engine's kernels keep the first
// latencyDeviceBuckets of them (up to 2^40 ns, 18 minutes; a longer
// duration counts in the last).
const LatencyBuckets = 64 * LatencySub

// latencyDeviceBuckets is the buckets of the GPU engine's per-block
// histograms (client.cu's STM_LAT_BUCKETS): durations below 2^40 ns.
const latencyDeviceBuckets = 40 * LatencySub

// Latency is a log-linear histogram of durations in nanoseconds: bucket
// e*LatencySub + m holds the durations whose top bit is bit e (e >= 3)
// and whose next three bits are m; durations of 1 to 7 ns have a bucket
// each, and 0 counts as 1 ns. The CPU and GPU engines time each committed
// transaction into one (Result.Latency), and the lock-based bank peers
// each of their transactions, so their quantiles compare bucket for
// bucket. The zero value is empty. Cost: 4 KiB; Record is O(1) without
// allocation; Merge and Quantile O(LatencyBuckets).
type Latency struct {
	Buckets [LatencyBuckets]uint64
	Sum     time.Duration // of every duration recorded (0 ns counted as 1)
}

// LatencyBucket returns the bucket of a duration of n nanoseconds (n = 0
// counts as 1).
func LatencyBucket(n uint64) int {
	n = max(n, 1)
	e := bits.Len64(n) - 1
	if e < 3 {
		return int(n) // 1 to 7 ns: a bucket each
	}
	return e*LatencySub + int(n>>(e-3)&(LatencySub-1))
}

// LatencyBucketTop returns the largest duration bucket b holds.
func LatencyBucketTop(b int) time.Duration {
	e, m := b/LatencySub, uint64(b%LatencySub)
	if e < 3 {
		return time.Duration(b)
	}
	return time.Duration(((LatencySub + m + 1) << (e - 3)) - 1)
}

// Record counts one duration.
func (h *Latency) Record(d time.Duration) {
	d = max(d, 1)
	h.Buckets[LatencyBucket(uint64(d))]++
	h.Sum += d
}

// Merge adds o's counts to h.
func (h *Latency) Merge(o *Latency) {
	for i, c := range o.Buckets {
		h.Buckets[i] += c
	}
	h.Sum += o.Sum
}

// Count returns the durations recorded.
func (h *Latency) Count() uint64 {
	var n uint64
	for _, c := range h.Buckets {
		n += c
	}
	return n
}

// Mean returns the mean duration recorded (0 when none).
func (h *Latency) Mean() time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	return h.Sum / time.Duration(n)
}

// Quantile returns the upper bound of the bucket holding quantile q in
// [0, 1] of the recorded durations (0 when none): no lower than the true
// quantile and within 1/LatencySub of an octave above it.
func (h *Latency) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n-1)) + 1 // 1-based rank of the quantile
	var seen uint64
	for b, c := range h.Buckets {
		if seen += c; seen >= rank {
			return LatencyBucketTop(b)
		}
	}
	return LatencyBucketTop(len(h.Buckets) - 1)
}

// P50 returns the median, Quantile(0.5).
func (h *Latency) P50() time.Duration { return h.Quantile(0.5) }

// P99 returns the 99th percentile, Quantile(0.99).
func (h *Latency) P99() time.Duration { return h.Quantile(0.99) }

// P999 returns the 99.9th percentile, Quantile(0.999).
func (h *Latency) P999() time.Duration { return h.Quantile(0.999) }

// String returns "p50 12µs, p99 40µs, p99.9 60µs (N timed)", or "not
// timed" when nothing was recorded.
func (h *Latency) String() string {
	n := h.Count()
	if n == 0 {
		return "not timed"
	}
	return fmt.Sprintf("p50 %v, p99 %v, p99.9 %v (%d timed)", h.P50(), h.P99(), h.P999(), n)
}
