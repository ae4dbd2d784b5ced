package prim

import (
	"fmt"
	"math"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// selectMaxCount is the largest input of Select, RunLengthEncode and
// ReduceByKey: their counts are 32-bit.
const selectMaxCount = math.MaxUint32

// Select copies, in order, the elements in[i] with flags[i] != 0 to the
// front of out and returns their number. flags must have len(in) elements;
// out must hold the kept elements (len(in) always suffices) and must not
// overlap in. If out is too short, Select writes nothing and returns the
// number it needs with an error. Cost: one read of in and flags and one
// write of the kept elements (on the GPU engine, plus the copies).
func Select[T Word](e *Engine, in []T, flags []uint8, out []T) (int, error) {
	if len(flags) != len(in) {
		return 0, fmt.Errorf("prim: select: %d flags for %d elements", len(flags), len(in))
	}
	if uint64(len(in)) > selectMaxCount {
		return 0, fmt.Errorf("prim: select: %d elements, at most %d", len(in), uint64(selectMaxCount))
	}
	var kept int
	var err error
	if e.Backend() == gpu.BackendGPU {
		kept, err = selectOnGPU(e, in, flags, out)
	} else {
		kept, err = selectCPU(e.Workers(), in, flags, out)
	}
	if err != nil {
		return kept, fmt.Errorf("prim: select: %w", err)
	}
	return kept, nil
}

// RunLengthEncode finds the runs of equal consecutive keys and writes the
// key of the r-th run to uniq[r] and its length to counts[r]; it returns
// the number of runs. uniq and counts must hold the runs (len(keys) always
// suffices) and must not overlap keys. If one is too short it writes nothing
// and returns the number of runs with an error. Cost: one read of keys and
// one write of the runs (on the GPU engine, plus the copies).
func RunLengthEncode[K Key](e *Engine, keys []K, uniq []K, counts []uint32) (int, error) {
	if uint64(len(keys)) > selectMaxCount {
		return 0, fmt.Errorf("prim: run-length encode: %d keys, at most %d", len(keys), uint64(selectMaxCount))
	}
	var runs int
	var err error
	if e.Backend() == gpu.BackendGPU {
		runs, err = reduceByKeyOnGPU[K, uint32](e, keys, nil, uniq, counts)
	} else {
		runs, err = reduceByKeyCPU[K, uint32](e.Workers(), keys, nil, uniq, counts)
	}
	if err != nil {
		return runs, fmt.Errorf("prim: run-length encode: %w", err)
	}
	return runs, nil
}

// ReduceByKey finds the runs of equal consecutive keys and writes the key
// of the r-th run to uniq[r] and the sum of its values (modulo 2^bits) to
// sums[r]; it returns the number of runs. vals must have len(keys)
// elements; uniq and sums must hold the runs (len(keys) always suffices)
// and must not overlap the inputs. If one is too short it writes nothing
// and returns the number of runs with an error. Cost: one read of keys and
// vals and one write of the runs (on the GPU engine, plus the copies).
func ReduceByKey[K Key, V Word](e *Engine, keys []K, vals []V, uniq []K, sums []V) (int, error) {
	if len(vals) != len(keys) {
		return 0, fmt.Errorf("prim: reduce by key: %d values for %d keys", len(vals), len(keys))
	}
	if uint64(len(keys)) > selectMaxCount {
		return 0, fmt.Errorf("prim: reduce by key: %d keys, at most %d", len(keys), uint64(selectMaxCount))
	}
	var runs int
	var err error
	if e.Backend() == gpu.BackendGPU {
		runs, err = reduceByKeyOnGPU(e, keys, vals, uniq, sums)
	} else {
		runs, err = reduceByKeyCPU(e.Workers(), keys, vals, uniq, sums)
	}
	if err != nil {
		return runs, fmt.Errorf("prim: reduce by key: %w", err)
	}
	return runs, nil
}

// errShortRuns reports output slices too short for the runs found.
func errShortRuns(what string, need, uniq, sums int) error {
	return fmt.Errorf("%d runs, but uniq holds %d and %s %d", need, uniq, what, sums)
}

// selectCPU is the CPU twin of the select kernels: each chunk counts its
// kept elements, the counts are scanned, then each chunk copies its kept
// elements from its offset.
func selectCPU[T Word](workers int, in []T, flags []uint8, out []T) (int, error) {
	n := len(in)
	chunks := scanChunks(workers, n)
	offsets := make([]int, chunks)
	par.Ranges(n, chunks, func(c, lo, hi int) {
		k := 0
		for _, f := range flags[lo:hi] {
			if f != 0 {
				k++
			}
		}
		offsets[c] = k
	})
	kept := 0
	for c, k := range offsets {
		offsets[c] = kept
		kept += k
	}
	if len(out) < kept {
		return kept, fmt.Errorf("%d elements kept, out holds %d", kept, len(out))
	}
	par.Ranges(n, chunks, func(c, lo, hi int) {
		j := offsets[c]
		for i := lo; i < hi; i++ {
			if flags[i] != 0 {
				out[j] = in[i]
				j++
			}
		}
	})
	return kept, nil
}

// segSum is the reduce-by-key scan value (the kernels' Pair): the number of
// run heads in a range and the sum of the values after its last head.
type segSum[V Word] struct {
	heads int
	sum   V
}

// then combines a range with the range b that follows it.
func (a segSum[V]) then(b segSum[V]) segSum[V] {
	if b.heads > 0 {
		return segSum[V]{a.heads + b.heads, b.sum}
	}
	return segSum[V]{a.heads, a.sum + b.sum}
}

// reduceByKeyCPU is the CPU twin of the reduce-by-key kernels (vals nil:
// every value is 1, run-length encoding). Each chunk reduces its items to a
// segSum, the chunk sums are scanned, then each chunk walks its items from
// its prefix: a head writes its key and the finished sum of the run before
// it, and the last item writes the last run's sum. Runs crossing chunks
// need no special case.
func reduceByKeyCPU[K Key, V Word](workers int, keys []K, vals []V, uniq []K, sums []V) (int, error) {
	n := len(keys)
	if n == 0 {
		return 0, nil
	}
	value := func(i int) V {
		if vals == nil {
			return 1
		}
		return vals[i]
	}
	chunks := scanChunks(workers, n)
	prefixes := make([]segSum[V], chunks)
	par.Ranges(n, chunks, func(c, lo, hi int) {
		var a segSum[V]
		for i := lo; i < hi; i++ {
			if i == 0 || keys[i] != keys[i-1] {
				a.heads++
				a.sum = value(i)
			} else {
				a.sum += value(i)
			}
		}
		prefixes[c] = a
	})
	var run segSum[V]
	for c, a := range prefixes {
		prefixes[c] = run
		run = run.then(a)
	}
	runs := run.heads
	if len(uniq) < runs || len(sums) < runs {
		return runs, errShortRuns(sumsName(vals == nil), runs, len(uniq), len(sums))
	}
	par.Ranges(n, chunks, func(c, lo, hi int) {
		p := prefixes[c]
		for i := lo; i < hi; i++ {
			if i == 0 || keys[i] != keys[i-1] {
				uniq[p.heads] = keys[i]
				if p.heads > 0 {
					sums[p.heads-1] = p.sum
				}
				p.heads++
				p.sum = value(i)
			} else {
				p.sum += value(i)
			}
		}
		if hi == n {
			sums[p.heads-1] = p.sum
		}
	})
	return runs, nil
}

// sumsName names the second output in errors.
func sumsName(counts bool) string {
	if counts {
		return "counts"
	}
	return "sums"
}
