package bench

import (
	"fmt"

	"github.com/warpkv/warpkv/internal/par"
)

// Size of the CPU memory copy measurement: large enough to defeat the
// caches of any current CPU.
const cpuCopyBytes = 256 << 20

// MeasureCPUCopy measures the CPU's memory copy bandwidth over two buffers
// of size bytes: once on one goroutine and once split over workers
// goroutines (0: GOMAXPROCS is not assumed, 1 is used). Bytes count as read
// plus written, like the GPU copy measurement. It returns the two results,
// the parallel one last, with its ratio to the single-thread one. Cost:
// 2*size bytes of Go heap (pointer-free) and (warmup+reps) copies of each.
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
	r1 := NewResult(fmt.Sprintf("memory copy, 1 thread (%s, 16 B items)", IEC(size)), "cpu", size/16, 2*size, one)
	rn := NewResult(fmt.Sprintf("memory copy, %d threads (%s, 16 B items)", workers, IEC(size)), "cpu", size/16, 2*size, all)
	return []Result{r1, rn.VsPeer("1 thread", r1)}, nil
}

// parallelCopy copies src to dst in workers contiguous chunks, one per
// goroutine.
func parallelCopy(dst, src []byte, workers int) {
	par.Ranges(len(src), workers, func(_, lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}
