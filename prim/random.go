package prim

// SplitMix64 returns element i of the deterministic pseudo-random sequence
// with the given seed; the random_u64 kernel in fill.cu produces the same
// values on the device. Cost: a few multiplications.
func SplitMix64(seed, i uint64) uint64 {
	z := seed + (i+1)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}
