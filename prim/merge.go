package prim

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// mergeCPUGrain is the fewest outputs worth a goroutine of their own in the
// CPU merge.
const mergeCPUGrain = 1 << 14

// Merge writes the stable merge of the ascending runs ak and bk into outK:
// on equal keys every element of a comes before every element of b, and
// each run keeps its order. Values follow their keys from av and bv into
// outV; with outV nil (and av, bv nil or empty) only keys are merged.
// len(outK) must be len(ak)+len(bk), and with values len(av) = len(ak),
// len(bv) = len(bk), len(outV) = len(outK). Runs that are not ascending
// give an unspecified output. Cost: O(n) work over e.Workers() goroutines on
// the CPU; on the GPU, the copies in and out plus one pass over the data.
func Merge[K Key, V Word](e *Engine, ak []K, av []V, bk []K, bv []V, outK []K, outV []V) error {
	if err := checkMerge(len(ak), len(av), len(bk), len(bv), len(outK), len(outV), outV != nil); err != nil {
		return fmt.Errorf("prim: merge: %w", err)
	}
	if e.Backend() == gpu.BackendGPU {
		if err := mergeOnGPU(e, ak, av, bk, bv, outK, outV); err != nil {
			return fmt.Errorf("prim: merge: %w", err)
		}
		return nil
	}
	mergeCPU(e.Workers(), ak, av, bk, bv, outK, outV)
	return nil
}

// checkMerge validates the lengths of Merge's slices.
func checkMerge(na, nav, nb, nbv, nout, noutV int, withValues bool) error {
	if nout != na+nb {
		return fmt.Errorf("outK has %d elements, want len(ak)+len(bk) = %d", nout, na+nb)
	}
	if !withValues {
		if nav != 0 || nbv != 0 {
			return fmt.Errorf("values given (%d in av, %d in bv) but outV is nil", nav, nbv)
		}
		return nil
	}
	switch {
	case nav != na:
		return fmt.Errorf("av has %d elements, ak %d", nav, na)
	case nbv != nb:
		return fmt.Errorf("bv has %d elements, bk %d", nbv, nb)
	case noutV != nout:
		return fmt.Errorf("outV has %d elements, outK %d", noutV, nout)
	}
	return nil
}

// mergeCPU is the CPU twin of the GPU merge: the output is cut into equal
// chunks, each chunk's merge-path split is found by binary search, and the
// chunks are merged sequentially on their own goroutines.
func mergeCPU[K Key, V Word](workers int, ak []K, av []V, bk []K, bv []V, outK []K, outV []V) {
	n := len(outK)
	chunks := min(workers, n/mergeCPUGrain)
	if chunks <= 1 {
		mergeSeq(ak, av, bk, bv, outK, outV)
		return
	}
	par.Do(chunks, func(c int) {
		d0, d1 := par.Bound(n, chunks, c), par.Bound(n, chunks, c+1)
		i0 := mergePathSplit(ak, bk, d0)
		// For ascending runs i0 <= i1 <= i0+d1-d0; the clamp keeps the
		// slices in range when they are not (the order is then unspecified).
		i1 := min(max(mergePathSplit(ak, bk, d1), i0), i0+d1-d0)
		j0, j1 := d0-i0, d1-i1
		if outV == nil {
			mergeSeq[K, V](ak[i0:i1], nil, bk[j0:j1], nil, outK[d0:d1], nil)
			return
		}
		mergeSeq(ak[i0:i1], av[i0:i1], bk[j0:j1], bv[j0:j1], outK[d0:d1], outV[d0:d1])
	})
}

// mergePathSplit returns how many of the first d outputs of the stable
// merge of a and b come from a: the smallest i in [max(0,d-len(b)),
// min(d,len(a))] with a[i] > b[d-1-i]. Cost: O(log min(len(a), len(b))).
func mergePathSplit[K Key](a, b []K, d int) int {
	lo, hi := max(0, d-len(b)), min(d, len(a))
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if a[mid] <= b[d-1-mid] {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// mergeSeq merges a and b into out sequentially, taking a on ties; values
// are merged when outV is not nil.
func mergeSeq[K Key, V Word](ak []K, av []V, bk []K, bv []V, outK []K, outV []V) {
	if outV == nil {
		mergeKeysSeq(ak, bk, outK)
		return
	}
	i, j, o := 0, 0, 0
	for i < len(ak) && j < len(bk) {
		if bk[j] < ak[i] {
			outK[o], outV[o] = bk[j], bv[j]
			j++
		} else {
			outK[o], outV[o] = ak[i], av[i]
			i++
		}
		o++
	}
	// At most one run has elements left.
	copy(outK[o:], ak[i:])
	copy(outV[o:], av[i:])
	o += len(ak) - i
	copy(outK[o:], bk[j:])
	copy(outV[o:], bv[j:])
}

// mergeKeysSeq merges the keys a and b into out sequentially.
func mergeKeysSeq[K Key](a, b, out []K) {
	i, j, o := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j] < a[i] {
			out[o] = b[j]
			j++
		} else {
			out[o] = a[i]
			i++
		}
		o++
	}
	o += copy(out[o:], a[i:]) // at most one run has elements left
	copy(out[o:], b[j:])
}
