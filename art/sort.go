package art

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// sortGrain is the smallest run a goroutine sorts on its own.
const sortGrain = 1 << 14

// sortedOrder returns the batch positions of kb in key order, stably (equal
// keys keep their batch order). The GPU engine's chunked radix sort gives
// the same permutation: a stable sort by a total order is unique. Cost: a
// parallel stable LSD radix sort (prim.SortPairs) of the keys' first 8
// bytes with their positions; then, in each run of keys whose 8 bytes are
// equal, the same on the next 8 bytes of those longer than that
// (sortFrom), the runs spread over the workers: O(n) passes over 8-byte
// words, plus work only where keys share prefixes.
func sortedOrder(kb Keys, workers int) []uint32 {
	n := kb.Len()
	idx := make([]uint32, n)
	par.For(n, sortGrain, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			idx[i] = uint32(i)
		}
	})
	sortFrom(kb, idx, 0, prim.NewCPU(workers), workers)
	return idx
}

// sortSmall is the largest run sortFrom sorts by comparisons.
const sortSmall = 32

// sortFrom stably sorts idx, positions of keys that agree on their first
// depth bytes and are all longer than depth bytes (or depth is 0), by the
// rest of the keys: their 8-byte windows from depth (zero-padded,
// big-endian) by a radix sort on e, then each run of equal windows by the
// keys' lengths up to the window's end (a key ending in the window is a
// prefix of the longer ones of its run), then the run's keys longer than
// the window from depth+8, the runs on the workers. Small sets are sorted
// by comparisons.
func sortFrom(kb Keys, idx []uint32, depth int, e *prim.Engine, workers int) {
	if len(idx) <= sortSmall {
		slices.SortStableFunc(idx, func(a, b uint32) int {
			return bytes.Compare(kb.At(int(a))[depth:], kb.At(int(b))[depth:])
		})
		return
	}
	win := make([]uint64, len(idx))
	par.For(len(idx), sortGrain, workers, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			win[j] = window(kb.At(int(idx[j])), depth)
		}
	})
	_ = prim.SortPairs(e, win, idx) // lengths match: no error
	var runs [][2]int
	for a := 0; a < len(win); {
		b := a + 1
		for b < len(win) && win[b] == win[a] {
			b++
		}
		if b-a > 1 {
			runs = append(runs, [2]int{a, b})
		}
		a = b
	}
	one := prim.NewCPU(1)
	par.For(len(runs), 1, workers, func(lo, hi int) {
		for _, r := range runs[lo:hi] {
			run := idx[r[0]:r[1]]
			long := byLength(kb, run, depth)
			if len(long) > 1 {
				sortFrom(kb, long, depth+8, one, 1)
			}
		}
	})
}

// window returns key's 8 bytes from depth, big-endian, zero-padded.
func window(key []byte, depth int) uint64 {
	var w [8]byte
	if depth < len(key) {
		copy(w[:], key[depth:])
	}
	return binary.BigEndian.Uint64(w[:])
}

// byLength stably orders run (positions of keys with equal windows from
// depth) by length up to the window's end: keys ending in it first, the
// shorter first, then those longer than it, which it returns (their tail
// is still unsorted). Cost: one pass to classify, one to place.
func byLength(kb Keys, run []uint32, depth int) []uint32 {
	var counts [10]int
	class := func(p uint32) int { return min(len(kb.At(int(p)))-depth, 9) }
	for _, p := range run {
		counts[class(p)]++
	}
	if counts[class(run[0])] == len(run) { // one class: the order stands (all equal keys, or all longer)
		return run[len(run)-counts[9]:]
	}
	var at [10]int
	for c := 1; c < 10; c++ {
		at[c] = at[c-1] + counts[c-1]
	}
	sorted := make([]uint32, len(run))
	for _, p := range run {
		c := class(p)
		sorted[at[c]] = p
		at[c]++
	}
	copy(run, sorted)
	return run[len(run)-counts[9]:]
}

// lastOfRuns returns, of each run of equal keys in sorted order, the last
// position (the batch's last occurrence), in order. Cost: one comparison
// per key and a byte of flags per key, over the workers.
func lastOfRuns(kb Keys, order []uint32, workers int) []uint32 {
	n := len(order)
	parts := par.Parts(n, sortGrain, workers)
	kept := make([]int, parts+1)
	last := make([]bool, n)
	par.Ranges(n, parts, func(p, lo, hi int) {
		c := 0
		for i := lo; i < hi; i++ {
			if i+1 == n || !bytes.Equal(kb.At(int(order[i])), kb.At(int(order[i+1]))) {
				last[i] = true
				c++
			}
		}
		kept[p+1] = c
	})
	for p := range parts {
		kept[p+1] += kept[p]
	}
	out := make([]uint32, kept[parts])
	par.Ranges(n, parts, func(p, lo, hi int) {
		w := kept[p]
		for i := lo; i < hi; i++ {
			if last[i] {
				out[w] = order[i]
				w++
			}
		}
	})
	return out
}

// distinctPrefixes counts, for w = 1..maxWidth, the distinct w-byte
// prefixes of the sorted distinct keys (keys shorter than w not counted),
// each key compared with the one before it, over the workers.
func distinctPrefixes(kb Keys, order []uint32, workers int) [maxWidth + 1]int {
	n := len(order)
	parts := par.Parts(n, sortGrain, workers)
	counts := make([][maxWidth + 1]int, parts)
	par.Ranges(n, parts, func(p, lo, hi int) {
		out := &counts[p]
		for i := lo; i < hi; i++ {
			k := kb.At(int(order[i]))
			same := 0 // bytes of k's first maxWidth that the key before shares
			if i > 0 {
				q := kb.At(int(order[i-1]))
				for same < min(len(q), len(k), maxWidth) && q[same] == k[same] {
					same++
				}
			}
			for w := same + 1; w <= min(len(k), maxWidth); w++ {
				out[w]++
			}
		}
	})
	var out [maxWidth + 1]int
	for _, c := range counts {
		for w := range out {
			out[w] += c[w]
		}
	}
	return out
}
