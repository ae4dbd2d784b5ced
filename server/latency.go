package server

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits is log2 of the sub-buckets per power of two of a latencyHist:
// bucket bounds are within 1/16 (6%) of the values they hold.
const subBits = 4

// histBuckets covers every uint64 nanosecond value.
const histBuckets = (64 - subBits + 1) << subBits

// latencyHist is a log-linear histogram of durations, safe for concurrent
// use, pointer-free (8 KiB of counters). Recording costs a few atomic adds.
type latencyHist struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	sumNs  atomic.Uint64
	maxNs  atomic.Uint64
}

// histBucket returns the bucket of ns: values below 2^subBits have a bucket
// each; above, a power of two splits into 2^subBits equal parts.
func histBucket(ns uint64) int {
	if ns < 1<<subBits {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 - subBits // shift keeping subBits+1 significant bits
	return (e+1)<<subBits | int(ns>>e)&(1<<subBits-1)
}

// histUpper returns the largest value of bucket b.
func histUpper(b int) uint64 {
	if b < 1<<subBits {
		return uint64(b)
	}
	e := b>>subBits - 1
	m := uint64(b&(1<<subBits-1)) | 1<<subBits
	return (m+1)<<e - 1
}

func (h *latencyHist) add(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[histBucket(ns)].Add(1)
	h.n.Add(1)
	h.sumNs.Add(ns)
	for {
		m := h.maxNs.Load()
		if ns <= m || h.maxNs.CompareAndSwap(m, ns) {
			return
		}
	}
}

// snapshot is a copy of a histogram's counters.
type histSnapshot struct {
	counts [histBuckets]uint64
	n      uint64
	sumNs  uint64
	maxNs  uint64
}

func (h *latencyHist) snapshot() *histSnapshot {
	s := &histSnapshot{n: h.n.Load(), sumNs: h.sumNs.Load(), maxNs: h.maxNs.Load()}
	for i := range h.counts {
		s.counts[i] = h.counts[i].Load()
	}
	return s
}

// quantile returns the upper bound of the bucket holding quantile q (0..1)
// of the recorded values, capped by the maximum; 0 when empty.
func (s *histSnapshot) quantile(q float64) time.Duration {
	var total uint64
	for _, c := range s.counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total-1)) + 1
	var seen uint64
	for b, c := range s.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(histUpper(b), s.maxNs))
		}
	}
	return time.Duration(s.maxNs)
}

// mean returns the average recorded value.
func (s *histSnapshot) mean() time.Duration {
	if s.n == 0 {
		return 0
	}
	return time.Duration(s.sumNs / s.n)
}
