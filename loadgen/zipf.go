package loadgen

import "math"

// ZipfTheta is the skew of Zipfian key popularity: YCSB's default.
const ZipfTheta = 0.99

// Zipf draws ranks 0..n-1 with probability proportional to 1/(rank+1)^theta
// for 0 < theta < 1, by the method of Gray et al. ("Quickly generating
// billion-record synthetic databases", SIGMOD 1994) that YCSB's
// ZipfianGenerator uses: exact for ranks 0 and 1, a close approximation
// beyond. Rank 0 is the most popular. A Zipf is immutable after NewZipf
// and safe for concurrent use; the caller supplies the uniform numbers.
type Zipf struct {
	n                        uint64
	theta, alpha, zetan, eta float64
	half                     float64 // 1 + 0.5^theta
}

// NewZipf prepares a Zipfian distribution over n ranks with skew theta
// (0 < theta < 1). Cost: O(n) to sum the zeta constant (about 30 ms per
// million ranks).
func NewZipf(n uint64, theta float64) *Zipf {
	zetan := 0.0
	for i := uint64(1); i <= n; i++ {
		zetan += 1 / math.Pow(float64(i), theta)
	}
	zeta2 := 1 + math.Pow(0.5, theta)
	return &Zipf{
		n:     n,
		theta: theta,
		alpha: 1 / (1 - theta),
		zetan: zetan,
		eta:   (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/zetan),
		half:  zeta2,
	}
}

// Rank maps a uniform number u in [0, 1) to a rank. Cost: one math.Pow.
func (z *Zipf) Rank(u float64) uint64 {
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < z.half {
		return 1
	}
	r := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(r, z.n-1)
}

// Prob returns the exact probability of rank r.
func (z *Zipf) Prob(r uint64) float64 {
	return 1 / math.Pow(float64(r+1), z.theta) / z.zetan
}
