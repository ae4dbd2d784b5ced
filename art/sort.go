package art

import (
	"bytes"
	"slices"

	"github.com/warpkv/warpkv/internal/par"
)

// sortGrain is the smallest run a goroutine sorts on its own.
const sortGrain = 1 << 14

// sortedOrder returns the batch positions of kb in key order, stably (equal
// keys keep their batch order). The GPU engine's chunked radix sort gives
// the same permutation: a stable sort by a total order is unique. Cost:
// O(n log n) key comparisons over the workers, then log(parts) parallel
// merge levels.
func sortedOrder(kb Keys, workers int) []uint32 {
	n := kb.Len()
	idx := make([]uint32, n)
	for i := range idx {
		idx[i] = uint32(i)
	}
	cmp := func(a, b uint32) int { return bytes.Compare(kb.At(int(a)), kb.At(int(b))) }
	parts := par.Parts(n, sortGrain, workers)
	bounds := make([]int, parts+1)
	for p := range bounds {
		bounds[p] = par.Bound(n, parts, p)
	}
	par.Ranges(n, parts, func(_, lo, hi int) { slices.SortStableFunc(idx[lo:hi], cmp) })
	tmp := make([]uint32, n)
	for len(bounds) > 2 {
		// Task p merges runs 2p and 2p+1; with an odd number of runs the
		// last task carries the last run over.
		pairs := (len(bounds) - 1) / 2
		par.Do(len(bounds)/2, func(p int) {
			a, m := bounds[2*p], bounds[2*p+1]
			if p == pairs {
				copy(tmp[a:m], idx[a:m])
				return
			}
			mergeRuns(idx[a:m], idx[m:bounds[2*p+2]], tmp[a:bounds[2*p+2]], cmp)
		})
		next := make([]int, 0, len(bounds)/2+1)
		for p := 0; p+1 < len(bounds); p += 2 {
			next = append(next, bounds[p])
		}
		bounds = append(next, n)
		idx, tmp = tmp, idx
	}
	return idx
}

// mergeRuns merges sorted a and b into out, a first on ties (stable). It
// is prim's mergeKeysSeq with a comparison function in place of <: art's
// keys are byte strings reached through indices, while prim's merge is
// instantiated per ordered key type and keeps a plain < in its inner loop,
// so the two loops stay separate.
func mergeRuns(a, b, out []uint32, cmp func(x, y uint32) int) {
	i, j, o := 0, 0, 0
	for i < len(a) && j < len(b) {
		if cmp(b[j], a[i]) < 0 {
			out[o] = b[j]
			j++
		} else {
			out[o] = a[i]
			i++
		}
		o++
	}
	o += copy(out[o:], a[i:])
	copy(out[o:], b[j:])
}

// lastOfRuns keeps, of each run of equal keys in sorted order, the last
// position (the batch's last occurrence). Cost: one comparison per key.
func lastOfRuns(kb Keys, order []uint32) []uint32 {
	w := 0
	for i, p := range order {
		if i+1 < len(order) && bytes.Equal(kb.At(int(p)), kb.At(int(order[i+1]))) {
			continue
		}
		order[w] = p
		w++
	}
	return order[:w]
}

// distinctPrefixes counts, for w = 1..maxWidth, the distinct w-byte
// prefixes of the sorted distinct keys (keys shorter than w not counted).
func distinctPrefixes(kb Keys, order []uint32) [maxWidth + 1]int {
	var out [maxWidth + 1]int
	for i, p := range order {
		k := kb.At(int(p))
		for w := 1; w <= maxWidth; w++ {
			if len(k) < w {
				break
			}
			if i == 0 {
				out[w]++
				continue
			}
			q := kb.At(int(order[i-1]))
			if len(q) < w || !bytes.Equal(q[:w], k[:w]) {
				out[w]++
			}
		}
	}
	return out
}
