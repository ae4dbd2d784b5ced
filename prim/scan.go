package prim

import (
	"fmt"
	"sync"

	"warpkv/gpu"
)

// ScanExclusive writes the exclusive prefix sums of in to out: out[i] =
// in[0] + ... + in[i-1], wrapping modulo 2^bits; out[0] = 0. out may be in
// itself; it must hold len(in) elements. Cost: one read and one write of
// every element (on the GPU engine, plus a copy in and a copy out).
func ScanExclusive[T Word](e *Engine, in, out []T) error {
	return scanHost(e, in, out, false)
}

// ScanInclusive writes the inclusive prefix sums of in to out: out[i] =
// in[0] + ... + in[i], wrapping modulo 2^bits. out may be in itself; it
// must hold len(in) elements. Cost as ScanExclusive.
func ScanInclusive[T Word](e *Engine, in, out []T) error {
	return scanHost(e, in, out, true)
}

func scanHost[T Word](e *Engine, in, out []T, inclusive bool) error {
	op := scanName(inclusive)
	if len(out) < len(in) {
		return fmt.Errorf("prim: %s: out holds %d elements, need %d", op, len(out), len(in))
	}
	out = out[:len(in)]
	if e.Backend() == gpu.BackendGPU {
		if err := scanOnGPU(e, in, out, inclusive); err != nil {
			return fmt.Errorf("prim: %s: %w", op, err)
		}
		return nil
	}
	scanCPU(e.Workers(), in, out, inclusive)
	return nil
}

func scanName(inclusive bool) string {
	if inclusive {
		return "inclusive scan"
	}
	return "exclusive scan"
}

// scanCPU is the CPU twin of the scan kernels: each chunk sums its items,
// the chunk totals are scanned, then each chunk scans its items from its
// offset. out may be in: every item is read before it is overwritten.
func scanCPU[T Word](workers int, in, out []T, inclusive bool) {
	bounds := scanSplit(workers, len(in))
	offsets := make([]T, len(bounds)-1)
	if len(offsets) > 1 {
		scanParallel(bounds, func(c, lo, hi int) {
			var s T
			for _, v := range in[lo:hi] {
				s += v
			}
			offsets[c] = s
		})
		var run T
		for c, s := range offsets {
			offsets[c] = run
			run += s
		}
	}
	scanParallel(bounds, func(c, lo, hi int) {
		acc := offsets[c]
		if inclusive {
			for i := lo; i < hi; i++ {
				acc += in[i]
				out[i] = acc
			}
			return
		}
		for i := lo; i < hi; i++ {
			v := in[i]
			out[i] = acc
			acc += v
		}
	})
}

// scanCPUMinChunk is the fewest items the CPU twins of scan, select,
// run-length encoding and reduce-by-key give one goroutine: below it a
// goroutine costs more than the work.
const scanCPUMinChunk = 1 << 15

// scanSplit cuts [0, n) into at most workers contiguous chunks of at least
// scanCPUMinChunk items (one chunk when n is smaller) and returns their
// bounds: chunk c is [bounds[c], bounds[c+1]).
func scanSplit(workers, n int) []int {
	chunks := min(max(workers, 1), max(n/scanCPUMinChunk, 1))
	bounds := make([]int, chunks+1)
	for c := range bounds {
		bounds[c] = int(int64(n) * int64(c) / int64(chunks))
	}
	return bounds
}

// scanParallel runs fn(c, lo, hi) for every chunk c of bounds (see
// scanSplit), each on its own goroutine, and waits for all of them.
func scanParallel(bounds []int, fn func(c, lo, hi int)) {
	chunks := len(bounds) - 1
	if chunks == 1 {
		fn(0, bounds[0], bounds[1])
		return
	}
	var wg sync.WaitGroup
	for c := 0; c < chunks; c++ {
		wg.Go(func() { fn(c, bounds[c], bounds[c+1]) })
	}
	wg.Wait()
}
