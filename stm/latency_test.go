package stm

import (
	"fmt"
	"testing"
	"time"
)

// TestLatencyQuantiles: a quantile is the top of the bucket that holds it,
// no lower than the true value and within 1/8 of an octave above it; the
// mean is exact; merging adds counts and sums.
func TestLatencyQuantiles(t *testing.T) {
	for _, c := range []struct {
		name string
		ds   []time.Duration
		q    float64
		want time.Duration // the true quantile
	}{
		{"empty", nil, 0.5, 0},
		{"one", []time.Duration{3}, 0.5, 3},
		{"zero counts as 1 ns", []time.Duration{0}, 0.5, 1},
		{"median of 1..1000 µs", seq(1000, time.Microsecond), 0.5, 500 * time.Microsecond},
		{"p99 of 1..1000 µs", seq(1000, time.Microsecond), 0.99, 990 * time.Microsecond},
		{"p99.9 of 1..10000 µs", seq(10000, time.Microsecond), 0.999, 9990 * time.Microsecond},
		{"p99 with a slow tail", append(seq(980, time.Nanosecond), seq(20, time.Millisecond)...), 0.99, 10 * time.Millisecond},
	} {
		var h Latency
		var sum time.Duration
		for _, d := range c.ds {
			h.Record(d)
			sum += max(d, 1)
		}
		got := h.Quantile(c.q)
		if got < c.want || float64(got) > float64(c.want)*(1+1.0/LatencySub)+1 {
			t.Errorf("%s: quantile %g = %v, want %v to %v", c.name, c.q, got, c.want, time.Duration(float64(c.want)*(1+1.0/LatencySub)))
		}
		if h.Count() != uint64(len(c.ds)) || h.Sum != sum {
			t.Errorf("%s: count %d, sum %v; want %d, %v", c.name, h.Count(), h.Sum, len(c.ds), sum)
		}
		if p50, p99, p999 := h.P50(), h.P99(), h.P999(); p50 > p99 || p99 > p999 {
			t.Errorf("%s: p50 %v, p99 %v, p99.9 %v: not ordered", c.name, p50, p99, p999)
		}
		var twice Latency
		twice.Merge(&h)
		twice.Merge(&h)
		if twice.Count() != 2*h.Count() || twice.Sum != 2*h.Sum || twice.Quantile(c.q) != got {
			t.Errorf("%s: merged twice: count %d, sum %v, quantile %v", c.name, twice.Count(), twice.Sum, twice.Quantile(c.q))
		}
	}
	for n := uint64(1); n < 1<<62; n = n*3 + 1 { // every duration lies in its bucket
		b := LatencyBucket(n)
		if top := uint64(LatencyBucketTop(b)); n > top || (b > 1 && n <= uint64(LatencyBucketTop(b-1))) {
			t.Fatalf("%d ns in bucket %d (top %d, previous top %d)", n, b, top, LatencyBucketTop(b-1))
		}
	}
	// The GPU engine's histograms keep the buckets below 2^40 ns.
	if b := LatencyBucket(1<<40 - 1); b != latencyDeviceBuckets-1 {
		t.Errorf("2^40-1 ns in bucket %d, want the device's last, %d", b, latencyDeviceBuckets-1)
	}
	if b := LatencyBucket(1 << 40); b != latencyDeviceBuckets {
		t.Errorf("2^40 ns in bucket %d, want %d", b, latencyDeviceBuckets)
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

// checkLatency checks a run's commit latencies: one per commit, p50 <=
// p99 <= p99.9, none longer than the run (within the histogram's
// rounding and the clocks' resolution), and their sum no more than the
// tickets' time in flight (a thread's transactions do not overlap; with
// migration a warp's inbox holds more).
func checkLatency(t *testing.T, res *Result) {
	t.Helper()
	l := &res.Latency
	if l.Count() != res.Total() {
		t.Errorf("%s: %d commit latencies, want one per commit (%d)", res.Device, l.Count(), res.Total())
	}
	p50, p99, p999 := l.P50(), l.P99(), l.P999()
	if res.Total() > 0 && (p50 <= 0 || p50 > p99 || p99 > p999) {
		t.Errorf("%s: p50 %v, p99 %v, p99.9 %v: want 0 < p50 <= p99 <= p99.9", res.Device, p50, p99, p999)
	}
	slack := time.Millisecond + res.Elapsed/50
	if top := LatencyBucketTop(LatencyBucket(uint64(res.Elapsed + slack))); p999 > top {
		t.Errorf("%s: p99.9 %v, longer than the run (%v)", res.Device, p999, res.Elapsed)
	}
	// Tickets in flight: one per thread, and with migration (STM_MIGRATE)
	// up to one more per thread in the warps' inboxes (32 slots a warp).
	inFlight := res.Threads
	if res.Server.Migrated > 0 {
		inFlight *= 2
	}
	if most := time.Duration(inFlight) * (res.Elapsed + slack); l.Sum > most {
		t.Errorf("%s: latencies sum to %v, more than %d tickets in flight x %v", res.Device, l.Sum, inFlight, res.Elapsed)
	}
}

// latencyBanks are TestCommitLatency's workloads.
var latencyBanks = []Bank{
	{Accounts: 65536, Initial: 100, ReadSize: 100},
	{Accounts: 65536, Initial: 100, ReadOnly: 0.9, ReadSize: 100},
}

// gpuLatencyRun is how long TestCommitLatency's GPU runs take.
const gpuLatencyRun = 300 * time.Millisecond

// latencyRun is TestCommitLatency's timed run of duration d.
func latencyRun(d time.Duration) RunOptions { return RunOptions{Duration: d, Seed: 1, Latency: true} }

// TestCommitLatency runs bank workloads for a duration on every engine
// with RunOptions.Latency and checks the commit latencies (checkLatency),
// that a run without it times nothing, and Little's law: with
// every thread always running a transaction, the mean latency is about
// threads / commit rate; the test allows a factor of 4 below it (time a
// thread spends between transactions) and 1.2 above.
func TestCommitLatency(t *testing.T) {
	engines := []struct {
		name string
		open func(t *testing.T) Options
		d    time.Duration
	}{
		{"cpu", func(*testing.T) Options { return Options{Device: "cpu", Workers: 4} }, 200 * time.Millisecond},
		{"gpu", func(t *testing.T) Options { return Options{GPU: gpuDevice(t)} }, gpuLatencyRun},
	}
	for _, en := range engines {
		for _, w := range latencyBanks {
			t.Run(fmt.Sprintf("%s, %g%% read-only", en.name, 100*w.ReadOnly), func(t *testing.T) {
				e, err := Open(en.open(t))
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				res, err := e.Run(w, latencyRun(en.d))
				if err != nil {
					t.Fatal(err)
				}
				checkLatency(t, res)
				// Without RunOptions.Latency nothing is timed.
				if off, err := e.Run(w, RunOptions{Transactions: 1000, Seed: 1}); err != nil || off.Latency.Count() != 0 || off.Latency.Sum != 0 {
					t.Errorf("a run without RunOptions.Latency: %v, %d latencies", err, off.Latency.Count())
				}
				little := time.Duration(float64(res.Threads) / res.Throughput() * 1e9)
				if mean := res.Latency.Mean(); mean < little/4 || float64(mean) > 1.2*float64(little) {
					t.Errorf("mean latency %v, threads/rate %v: want within a factor of 4 below, 1.2 above", mean, little)
				}
				t.Logf("%s: %d threads, %.3g commits/s, latency %s, mean %v, threads/rate %v",
					res.Device, res.Threads, res.Throughput(), &res.Latency, res.Latency.Mean(), little)
			})
		}
	}
}
