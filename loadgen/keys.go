package loadgen

import "math/rand/v2"

const hexDigits = "0123456789abcdef"

// putKey writes the key of index i into dst: "k", then i in hex,
// right-aligned and padded with '0' to len(dst). dst must hold "k" and the
// digits (Config checks the key size against the number of keys).
func putKey(dst []byte, i uint64) {
	dst[0] = 'k'
	for j := len(dst) - 1; j > 0; j-- {
		dst[j] = hexDigits[i&15]
		i >>= 4
	}
}

// keyChooser draws key indexes, uniformly or by Zipfian popularity (rank
// r is key r).
type keyChooser struct {
	n    uint64
	zipf *Zipf // nil: uniform
	r    *rand.Rand
}

// next returns a key index in [0, n). Cost: a random number, and a
// math.Pow when Zipfian.
func (k *keyChooser) next() uint64 {
	if k.zipf != nil {
		return k.zipf.Rank(k.r.Float64())
	}
	return k.r.Uint64N(k.n)
}
