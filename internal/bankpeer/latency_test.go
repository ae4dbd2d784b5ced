package bankpeer

import (
	"testing"
	"time"
)

// TestLatencyQuantiles: a quantile is the top of the bucket that holds it,
// no lower than the true value and within 1/8 of an octave above it.
func TestLatencyQuantiles(t *testing.T) {
	for _, c := range []struct {
		name string
		ds   []time.Duration
		q    float64
		want time.Duration // the true quantile
	}{
		{"empty", nil, 0.5, 0},
		{"one", []time.Duration{3}, 0.5, 3},
		{"median of 1..1000 µs", seq(1000, time.Microsecond), 0.5, 500 * time.Microsecond},
		{"p99 of 1..1000 µs", seq(1000, time.Microsecond), 0.99, 990 * time.Microsecond},
		{"p99 with a slow tail", append(seq(980, time.Nanosecond), seq(20, time.Millisecond)...), 0.99, 10 * time.Millisecond},
	} {
		var h latencies
		for _, d := range c.ds {
			h.add(d)
		}
		got := h.quantile(c.q)
		if got < c.want || float64(got) > float64(c.want)*(1+1.0/latencySub)+1 {
			t.Errorf("%s: quantile %g = %v, want %v to %v", c.name, c.q, got, c.want, time.Duration(float64(c.want)*(1+1.0/latencySub)))
		}
	}
	for n := uint64(1); n < 1<<40; n = n*3 + 1 { // every duration lies in its bucket
		b := latencyBucket(n)
		if top := uint64(bucketTop(b)); n > top || (b > 0 && n <= uint64(bucketTop(b-1))) {
			t.Fatalf("%d ns in bucket %d (top %d, previous top %d)", n, b, top, bucketTop(b-1))
		}
	}
}

// seq returns 1, 2, ..., n times unit.
func seq(n int, unit time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * unit
	}
	return out
}
