package loadgen

import (
	"math/rand/v2"
	"testing"
)

func TestZipfDistribution(t *testing.T) {
	for _, tc := range []struct {
		n       uint64
		samples int
	}{
		{n: 1000, samples: 2_000_000},
		{n: 1_000_000, samples: 2_000_000},
	} {
		z := NewZipf(tc.n, ZipfTheta)
		r := rand.New(rand.NewPCG(7, 8))
		counts := make(map[uint64]int)
		for range tc.samples {
			k := z.Rank(r.Float64())
			if k >= tc.n {
				t.Fatalf("n=%d: rank %d out of range", tc.n, k)
			}
			counts[k]++
		}
		// Ranks 0 and 1 are exact in Gray's method; the CDF at decades
		// follows the true one closely.
		for _, rank := range []uint64{0, 1} {
			got := float64(counts[rank]) / float64(tc.samples)
			want := z.Prob(rank)
			if got < want*0.98 || got > want*1.02 {
				t.Errorf("n=%d: P(rank %d) = %.5f, want %.5f", tc.n, rank, got, want)
			}
		}
		for top := uint64(10); top < tc.n; top *= 10 {
			got, want := 0.0, 0.0
			for r := uint64(0); r < top; r++ {
				got += float64(counts[r])
				want += z.Prob(r)
			}
			got /= float64(tc.samples)
			if d := got - want; d > 0.02 || d < -0.02 {
				t.Errorf("n=%d: P(rank < %d) = %.4f, want %.4f", tc.n, top, got, want)
			}
		}
	}
}

func TestZipfIsSkewed(t *testing.T) {
	// The most popular 1% of 100000 keys draw 60.5% of the accesses at
	// theta 0.99 (against 1% when uniform).
	z := NewZipf(100000, ZipfTheta)
	r := rand.New(rand.NewPCG(1, 2))
	hot := 0
	const samples = 200000
	for range samples {
		if z.Rank(r.Float64()) < 1000 {
			hot++
		}
	}
	if f := float64(hot) / samples; f < 0.58 || f > 0.63 {
		t.Errorf("top 1%% of keys drew %.3f of accesses, want 0.605", f)
	}
}
