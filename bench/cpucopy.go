package bench

import (
	"fmt"

	"github.com/warpkv/warpkv/internal/ntcopy"
	"github.com/warpkv/warpkv/internal/par"
)

// Size of the CPU memory copy measurement: large enough to defeat the
// caches of any current CPU.
const cpuCopyBytes = 256 << 20

// MeasureCPUCopy measures the CPU's memory copy bandwidth over two buffers
// of size bytes: once on one goroutine, once split over workers
// goroutines (0: GOMAXPROCS is not assumed, 1 is used), and once on as
// many with non-temporal stores in pieces of ntPiece taken in turn, as
// the pinned pipelines copy into their chunks (internal/ntcopy). Bytes
// count as read plus written, like the GPU copy measurement. It returns
// the three results in that order, the parallel copy with its ratio to
// the single-thread one and the non-temporal copy with its ratio to the
// parallel one. Cost: 2*size bytes of Go heap (pointer-free) and
// (warmup+reps) copies of each.
func MeasureCPUCopy(size int64, workers, warmup, reps int) ([]Result, error) {
	if size < 16 {
		return nil, fmt.Errorf("bench: cpu copy of %d bytes", size)
	}
	workers = max(workers, 1)
	src := make([]byte, size)
	dst := make([]byte, size)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	one, err := TimeCPU(warmup, reps, nil, func() error {
		copy(dst, src)
		return nil
	})
	if err != nil {
		return nil, err
	}
	all, err := TimeCPU(warmup, reps, nil, func() error {
		parallelCopy(dst, src, workers)
		return nil
	})
	if err != nil {
		return nil, err
	}
	nt, err := TimeCPU(warmup, reps, nil, func() error {
		par.Shared().For(len(src), ntPiece, workers, func(lo, hi int) { ntcopy.Bytes(dst[lo:hi], src[lo:hi]) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	r1 := NewResult(fmt.Sprintf("memory copy, 1 thread (%s, 16 B items)", IEC(size)), "cpu", size/16, 2*size, one)
	rn := NewResult(fmt.Sprintf("memory copy, %d threads (%s, 16 B items)", workers, IEC(size)), "cpu", size/16, 2*size, all)
	rt := NewResult(fmt.Sprintf("memory copy, %d threads, non-temporal stores in %s pieces (%s, 16 B items)", workers, IEC(ntPiece), IEC(size)), "cpu", size/16, 2*size, nt)
	return []Result{r1, rn.VsPeer("1 thread", r1), rt.VsPeer(fmt.Sprintf("%d threads", workers), rn)}, nil
}

// ntPiece is the bytes one goroutine of MeasureCPUCopy's non-temporal
// copy takes at a time: the B+ tree's staging pieces (btree's stageGrain).
const ntPiece = 128 << 10

// parallelCopy copies src to dst in workers contiguous chunks, one per
// goroutine.
func parallelCopy(dst, src []byte, workers int) {
	par.Ranges(len(src), workers, func(_, lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}
