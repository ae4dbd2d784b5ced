package btree

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/internal/rebuildbench"
)

// BenchmarkRangeKeyDeltas measures, on the host alone, what sending a
// ranges call's answer keys as deltas would cost and save (issue 22:
// fewer answer bytes): 1M answers of 16 keys, spaced as neighbours in a
// tree of 100M uniform keys (a uniform gap of mean 2^64/1e8, as
// BenchmarkGPURanges' tree). Each answer's first key stays 8 bytes, the
// others are 5-byte deltas from the key before (all but the gaps of 2^40
// or more, which never occur at this density and would need an escape).
// Timed on all of GOMAXPROCS's cores (par.Shared): the keys rebuilt into
// the Result's []uint64 by a running sum per answer (rebuild), against a
// plain copy of the same keys from a staging buffer (copy: the floor of
// any path that lands the keys in host memory before the Result, where
// the downloads land them in it by DMA at no host cost). Metrics: the
// transfer's bytes saved (of keys, values and query offsets) and their
// time at 55.2 GB/s (saved-us), the host's time a call (host-ms) and its
// output rate (GB/s), as internal/rebuildbench reports them.
func BenchmarkRangeKeyDeltas(b *testing.B) {
	const Q, per = 1_000_000, 16
	n := Q * per
	r := rand.New(rand.NewPCG(22, 16))
	keys := make([]uint64, n)
	for q := range Q {
		k := r.Uint64() >> 1
		for j := range per {
			k += r.Uint64N(2 * (^uint64(0) / 100_000_000))
			keys[q*per+j] = k
		}
	}
	const at = 8 + 5*(per-1) // an answer's encoded bytes
	enc := make([]byte, Q*at+8)
	maxBits := 0
	for q := range Q {
		e := enc[q*at:]
		binary.LittleEndian.PutUint64(e, keys[q*per])
		for j := 1; j < per; j++ {
			d := keys[q*per+j] - keys[q*per+j-1]
			maxBits = max(maxBits, bits.Len64(d))
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], d)
			copy(e[8+5*(j-1):], w[:5])
		}
	}
	if maxBits > 40 {
		b.Fatalf("a gap of %d bits: more than 5 bytes", maxBits)
	}
	full := n*16 + 8*(Q+1)
	saved := 16*n/2 - Q*at
	out := make([]uint64, n)
	parts := 8 * par.Shared().Workers()
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			par.Shared().Ranges(Q, parts, func(_, a, z int) {
				for q := a; q < z; q++ {
					e, o := enc[q*at:], out[q*per:(q+1)*per]
					k := binary.LittleEndian.Uint64(e)
					o[0] = k
					for j := 1; j < per; j++ {
						k += binary.LittleEndian.Uint64(e[8+5*(j-1):]) & (1<<40 - 1)
						o[j] = k
					}
				}
			})
		}
		for i := range out {
			if out[i] != keys[i] {
				b.Fatalf("key %d rebuilt as %d, want %d", i, out[i], keys[i])
			}
		}
		rebuildbench.Report(b, n, 8*n, full, saved, "deltas")
	})
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			par.Shared().Ranges(n, parts, func(_, a, z int) { copy(out[a:z], keys[a:z]) })
		}
		rebuildbench.Report(b, n, 8*n, full, saved, "deltas")
	})
}
