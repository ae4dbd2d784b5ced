package rebuildbench

import (
	"math"
	"testing"
	"time"
)

// TestReportMetrics runs a benchmark that reports a known transfer and
// checks each metric Report adds against its definition.
func TestReportMetrics(t *testing.T) {
	const keys, out, full, saved = 1000, 16000, 24000, 6000
	r := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			time.Sleep(10 * time.Microsecond) // a call that takes time: an empty loop's can round to 0 ns
		}
		Report(b, keys, out, full, saved, "a test")
	})
	if r.N == 0 {
		t.Fatal("the benchmark did not run")
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }
	for _, c := range []struct {
		unit string
		want float64
	}{{"saved-%", 25}, {"saved-us", saved / LinkRate * 1e6}} {
		if got, ok := r.Extra[c.unit]; !ok || !near(got, c.want) {
			t.Errorf("%s = %v (reported: %v), want %v", c.unit, got, ok, c.want)
		}
	}
	// The rate is the output over the time a call: their product is
	// the output's bytes.
	ms, gbs := r.Extra["host-ms"], r.Extra["GB/s"]
	if ms <= 0 || !near(ms*1e-3*gbs*1e9, out) {
		t.Errorf("host-ms %v and GB/s %v: want a positive time and their product %d bytes", ms, gbs, out)
	}
}
