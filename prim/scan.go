package prim

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
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
	n := len(in)
	chunks := scanChunks(workers, n)
	offsets := make([]T, chunks)
	if chunks > 1 {
		par.Ranges(n, chunks, func(c, lo, hi int) {
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
	par.Ranges(n, chunks, func(c, lo, hi int) {
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

// scanChunks is the number of contiguous chunks [0, n) is cut into for
// the CPU twins: at most workers, each of at least scanCPUMinChunk items
// (one chunk when n is smaller). Chunk c is [par.Bound(n, chunks, c),
// par.Bound(n, chunks, c+1)).
func scanChunks(workers, n int) int { return par.Parts(n, scanCPUMinChunk, workers) }
