package stm

import (
	"math"
	"math/bits"
)

// rng is SplitMix64, seeded per transaction from the run's seed and the
// transaction's ticket, so that a transaction draws the same accounts on
// every retry and on both engines. stm.cuh implements the same generator.
type rng struct{ state uint64 }

const golden = 0x9E3779B97F4A7C15

func mix64(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// txRNG returns the generator of transaction ticket in a run seeded seed.
func txRNG(seed, ticket uint64) rng {
	return rng{mix64(seed+golden) ^ mix64(ticket*0xD6E8FEB86659FD93+1)}
}

func (r *rng) next() uint64 {
	r.state += golden
	return mix64(r.state)
}

// below returns a uniform number in [0, n).
func (r *rng) below(n uint64) uint64 {
	hi, _ := bits.Mul64(r.next(), n)
	return hi
}

// unit returns a uniform float64 in [0, 1).
func (r *rng) unit() float64 { return float64(r.next()>>11) * (1.0 / (1 << 53)) }

// zipf draws ranks 0..n-1 with P(rank k) proportional to 1/(k+1)^theta
// (Gray et al., "Quickly generating billion-record synthetic databases").
// theta 0 is uniform.
type zipf struct {
	n                        uint64
	theta, zetan, eta, alpha float64
	half                     float64 // 1 + 0.5^theta
}

func newZipf(n uint64, theta float64) zipf {
	z := zipf{n: n, theta: theta}
	if theta == 0 || n < 2 {
		return z
	}
	for i := uint64(1); i <= n; i++ {
		z.zetan += 1 / math.Pow(float64(i), theta)
	}
	zeta2 := 1 + math.Pow(0.5, theta)
	z.half = zeta2
	z.alpha = 1 / (1 - theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/z.zetan)
	return z
}

func (z *zipf) draw(r *rng) uint64 {
	if z.theta == 0 || z.n < 2 {
		return r.below(z.n)
	}
	u := r.unit()
	uz := u * z.zetan
	switch {
	case uz < 1:
		return 0
	case uz < z.half:
		return 1
	}
	k := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(k, z.n-1)
}

// params returns the generator's constants as kernel parameters.
func (z *zipf) params() []uint64 {
	return []uint64{z.n, math.Float64bits(z.theta), math.Float64bits(z.zetan), math.Float64bits(z.eta),
		math.Float64bits(z.alpha), math.Float64bits(z.half)}
}
