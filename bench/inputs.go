package bench

import (
	"fmt"
	"unsafe"

	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// sizeOf returns the size of T in bytes.
func sizeOf[T any]() int64 {
	var z T
	return int64(unsafe.Sizeof(z))
}

// typeName returns "u32" or "u64".
func typeName[T prim.Word]() string {
	return fmt.Sprintf("u%d", 8*sizeOf[T]())
}

// inputGrain is the items one goroutine generates at a time when an input
// is filled on all cores.
const inputGrain = 1 << 16

// randomWords returns n pseudo-random values: element i is the low bits of
// prim.SplitMix64(seed, i). Cost: O(n) over GOMAXPROCS goroutines.
func randomWords[T prim.Word](n int, seed uint64) []T {
	out := make([]T, n)
	par.For(n, inputGrain, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = T(prim.SplitMix64(seed, uint64(i)))
		}
	})
	return out
}

// randomFlags returns n flags, each 1 with probability 1/2, and how many
// are 1.
func randomFlags(n int, seed uint64) ([]uint8, int) {
	out := make([]uint8, n)
	kept := 0
	for i := range out {
		out[i] = uint8(prim.SplitMix64(seed, uint64(i)) >> 63)
		kept += int(out[i])
	}
	return out, kept
}

// randomRuns returns n keys in runs of equal keys, run lengths uniform in
// [1, runMaxLen], each run's key random and different from the previous
// run's, and the number of runs.
func randomRuns[K prim.Word](n int, seed uint64) ([]K, int) {
	out := make([]K, n)
	runs := 0
	var prev K
	for i := 0; i < n; runs++ {
		h := prim.SplitMix64(seed, uint64(runs))
		k := K(h)
		if runs > 0 && k == prev {
			k++
		}
		for end := min(n, i+1+int(h>>32)%runMaxLen); i < end; i++ {
			out[i] = k
		}
		prev = k
	}
	return out, runs
}

// sortedWords returns n ascending pseudo-random values spread over half
// the range of K: random gaps, so runs of two such arrays interleave.
func sortedWords[K prim.Word](n int, seed uint64) []K {
	out := make([]K, n)
	if n == 0 {
		return out
	}
	span := float64(^K(0)) / 2
	gap := max(uint64(span/float64(n))*2, 1) // mean gap span/n
	var v K
	for i := range out {
		v += K(prim.SplitMix64(seed, uint64(i)) % gap)
		out[i] = v
	}
	return out
}

// randomSegments returns segment offsets (len = segments+1) covering
// exactly [0, n), segment lengths uniform in [0, segmentMaxLen].
func randomSegments(n int, seed uint64) []uint32 {
	offsets := []uint32{0}
	for pos, s := 0, uint64(0); pos < n; s++ {
		pos = min(n, pos+int(prim.SplitMix64(seed, s)%(segmentMaxLen+1)))
		offsets = append(offsets, uint32(pos))
	}
	return offsets
}

// randomMessages returns n messages of random bytes, lengths uniform in
// [1, keccakMaxLen], concatenated, and their offsets (len n+1).
func randomMessages(n int, seed uint64, minLen, maxLen int) ([]byte, []uint32) {
	offsets := make([]uint32, n+1)
	span := uint64(maxLen - minLen + 1)
	for i := range n {
		offsets[i+1] = offsets[i] + uint32(minLen) + uint32(prim.SplitMix64(seed, uint64(i))%span)
	}
	data := make([]byte, offsets[n])
	par.For(len(data)/8, inputGrain, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := prim.SplitMix64(seed+1, uint64(i))
			for j := range 8 {
				data[8*i+j] = byte(v >> (8 * j))
			}
		}
	})
	for i := len(data) &^ 7; i < len(data); i++ {
		data[i] = byte(prim.SplitMix64(seed+2, uint64(i)))
	}
	return data, offsets
}
