package art

import (
	"math/bits"
	"sort"

	"github.com/warpkv/warpkv/internal/par"
)

// sameKeyLen returns the one key length of n keys whose lengths sum to
// s1 and whose squared lengths sum to s2 when all n lengths are equal,
// else -1 (also for n == 0). By Cauchy-Schwarz n*s2 >= s1*s1, with
// equality exactly when every length is s1/n; the products are compared
// in 128 bits. Cost: O(1).
func sameKeyLen(n, s1, s2 uint64) int {
	if n == 0 {
		return -1
	}
	h1, l1 := bits.Mul64(n, s2)
	h2, l2 := bits.Mul64(s1, s1)
	if h1 != h2 || l1 != l2 || s1%n != 0 {
		return -1
	}
	return int(s1 / n)
}

// fillKeyOffsets writes offs[i] = i*keyLen, the key offsets of pairs
// whose keys all have keyLen bytes (the caller checked that
// len(offs)*keyLen fits in 32 bits), on all cores. Cost: one parallel
// pass writing 4 bytes a pair.
func fillKeyOffsets(offs []uint32, keyLen int) {
	par.Shared().Ranges(len(offs), par.Parts(len(offs), 1<<16, 0), func(_, lo, hi int) {
		o := uint32(lo * keyLen)
		for i := lo; i < hi; i++ {
			offs[i] = o
			o += uint32(keyLen)
		}
	})
}

// keyFillGrain is the pairs of one part of fillKeyFills: 128 KiB of key
// offsets, so that a call's million offsets reach every worker.
const keyFillGrain = 32 << 10

// fillKeyFills writes the key offsets of a pipelined call's chunks whose
// keys all have one length (fills, in chunk order) in one parallel job
// over all of them: parts of keyFillGrain pairs taken dynamically by the
// workers across the chunks' bounds, where a job per chunk in parts of
// 64Ki (before branch arng7) ran one chunk's few parts at a time. Cost: one
// pass writing 4 bytes a pair, on all cores.
func fillKeyFills(offs []uint32, fills []keyFill) {
	starts := make([]int, len(fills)+1) // fill i's pairs from starts[i] of the pass
	for i, f := range fills {
		starts[i+1] = starts[i] + f.n
	}
	par.Shared().For(starts[len(fills)], keyFillGrain, 0, func(lo, hi int) {
		i := sort.SearchInts(starts, lo+1) - 1 // starts[i] <= lo < starts[i+1]
		for lo < hi {
			f := fills[i]
			a, b := lo-starts[i], min(hi, starts[i+1])-starts[i]
			o := f.base + uint32(a*f.keyLen)
			for j := f.at + a; j < f.at+b; j++ {
				offs[j] = o
				o += uint32(f.keyLen)
			}
			lo = starts[i] + b
			i++
		}
	})
}
