package loadgen

import (
	"math/bits"
	"time"
)

// Histogram layout: values below 128 ns have a bucket each; above, every
// power of two is split into 64 buckets, so a bucket's width is at most
// 1/64 of its values (HDR histogram style, 2 significant digits).
const (
	histSub     = 64
	histBuckets = histSub * 59
)

// Histogram counts latencies in logarithmic buckets. Its zero value is
// empty; it holds no pointers (about 30 KiB). Not safe for concurrent use.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum, max int64
}

// histIndex returns the bucket of v >= 0.
func histIndex(v uint64) int {
	e := max(bits.Len64(v)-7, 0)
	return histSub*e + int(v>>e)
}

// histUpper returns the largest value in bucket i.
func histUpper(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	e := i/histSub - 1
	m := uint64(i - histSub*e)
	return (m+1)<<e - 1
}

// Record adds one latency. Cost: O(1).
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[histIndex(uint64(v))]++
	h.n++
	h.sum += v
	h.max = max(h.max, v)
}

// Merge adds the counts of o. Cost: O(buckets).
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count returns the number of latencies recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Mean returns the mean latency (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / int64(h.n))
}

// Max returns the largest latency recorded.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the latency below or at which a fraction q of the
// recorded ones lie, rounded up to its bucket's upper end (at most 1/64
// above the true value) and never above Max. Cost: O(buckets).
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	seen := uint64(0)
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(int64(histUpper(i)), h.max))
		}
	}
	return time.Duration(h.max)
}
