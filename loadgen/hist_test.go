package loadgen

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<40 + 12345, 1<<63 - 1} {
		i := histIndex(v)
		if i < prev || i >= histBuckets {
			t.Fatalf("index of %d = %d (previous %d, buckets %d)", v, i, prev, histBuckets)
		}
		prev = i
		if up := histUpper(i); up < v || float64(up-v) > float64(v)/64 {
			t.Errorf("value %d in bucket %d with upper end %d: too far", v, i, up)
		}
		if i > 0 && histUpper(i-1) >= v {
			t.Errorf("value %d also fits bucket %d (upper end %d)", v, i-1, histUpper(i-1))
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var a, b Histogram
	var all []time.Duration
	for i := range 100000 {
		d := time.Duration(r.ExpFloat64() * float64(50*time.Microsecond))
		all = append(all, d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	slices.Sort(all)
	if a.Count() != uint64(len(all)) || a.Max() != all[len(all)-1] {
		t.Fatalf("count %d max %v, want %d %v", a.Count(), a.Max(), len(all), all[len(all)-1])
	}
	for _, q := range []float64{0.5, 0.95, 0.99, 0.999} {
		exact := all[int(q*float64(len(all)))-1]
		got := a.Quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/50 {
			t.Errorf("quantile %v = %v, exact %v", q, got, exact)
		}
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 {
		t.Error("empty histogram reports latencies")
	}
}
