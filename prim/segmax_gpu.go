package prim

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of segmax.cu. Keep equal to its #defines.
const (
	segmaxWarp           = 32                       // SEGMAX_WARP: lanes per warp
	segmaxBlock          = 128                      // SEGMAX_BLOCK: threads per segmax_reduce block
	segmaxItems          = 11                       // SEGMAX_ITEMS: events per lane
	segmaxWarpEvents     = segmaxWarp * segmaxItems // SEGMAX_WARP_EVENTS: events per warp
	segmaxWarpsPerBlock  = segmaxBlock / segmaxWarp // SEGMAX_WARPS_PER_BLOCK
	segmaxPartitionBlock = 128                      // SEGMAX_PARTITION_BLOCK: threads per segmax_partition block
)

// DevSegmentedMax queues on e's stream out[s] = max(vals[offsets[s],
// offsets[s+1])) for s in [0, nseg), 0 for an empty segment. offsets holds
// at least nseg+1 entries, which should be nondecreasing and at most
// vals.Len(); that is not checked on the device (the host-level
// SegmentedMax checks it), but offsets that break it only give unspecified
// results: every access stays in bounds. It does not wait for the work.
// Cost: two kernels balanced over segments plus elements (one huge segment
// runs as fast as many small ones) that read each value and offset once and
// write each output once, sized for vals.Len()+nseg events, and 8 bytes of
// scratch per 352 events.
func DevSegmentedMax[T Word](e *Engine, vals *gpu.Buffer[T], offsets *gpu.Buffer[uint32], nseg int, out *gpu.Buffer[T]) error {
	if e.Backend() != gpu.BackendGPU {
		return fmt.Errorf("prim: segmented max: DevSegmentedMax on the %s engine, need gpu", e.Name())
	}
	if err := checkDevSegments(vals, offsets, nseg, out); err != nil {
		return fmt.Errorf("prim: segmented max: %w", err)
	}
	if nseg == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := devSegmaxLocked(e, vals, offsets, nseg, out); err != nil {
		return fmt.Errorf("prim: segmented max: %w", err)
	}
	return nil
}

// checkDevSegments validates DevSegmentedMax's sizes against its buffers.
func checkDevSegments[T Word](vals *gpu.Buffer[T], offsets *gpu.Buffer[uint32], nseg int, out *gpu.Buffer[T]) error {
	if vals == nil || offsets == nil || out == nil {
		return errors.New("nil buffer")
	}
	if nseg < 0 {
		return fmt.Errorf("negative segment count %d", nseg)
	}
	if offsets.Len() < nseg+1 || out.Len() < nseg {
		return fmt.Errorf("buffers of %d offsets and %d outputs too small for %d segments", offsets.Len(), out.Len(), nseg)
	}
	return nil
}

// devSegmaxLocked queues the two kernels; e.mu is held and nseg > 0.
func devSegmaxLocked[T Word](e *Engine, vals *gpu.Buffer[T], offsets *gpu.Buffer[uint32], nseg int, out *gpu.Buffer[T]) error {
	bits := 8 * unsafe.Sizeof(T(0))
	part, err := e.kernel("segmax.cu", fmt.Sprintf("segmax_partition_u%d", bits))
	if err != nil {
		return err
	}
	reduce, err := e.kernel("segmax.cu", fmt.Sprintf("segmax_reduce_u%d", bits))
	if err != nil {
		return err
	}
	// The event count lives on the device; vals.Len()+nseg bounds it, and
	// warps past the end do nothing.
	warps := gpu.Grid(vals.Len()+nseg, segmaxWarpEvents)
	scratch, err := e.scratchBuf("segmax starts", 8*(warps+1))
	if err != nil {
		return err
	}
	starts := asBuffer[uint64](scratch, 0, warps+1)
	if err := part.Launch(e.stream, gpu.D1(gpu.Grid(warps+1, segmaxPartitionBlock)), gpu.D1(segmaxPartitionBlock), 0,
		offsets, uint64(nseg), uint64(warps), starts, out); err != nil {
		return err
	}
	return reduce.Launch(e.stream, gpu.D1(gpu.Grid(warps, segmaxWarpsPerBlock)), gpu.D1(segmaxBlock), 0,
		vals, uint64(vals.Len()), offsets, uint64(nseg), uint64(warps), starts, out)
}

// segmaxOnGPU is SegmentedMax on a GPU engine: copy in, reduce, copy out.
// Only vals[:offsets[nseg]] travels.
func segmaxOnGPU[T Word](e *Engine, vals []T, offsets []uint32, out []T) (err error) {
	if len(out) == 0 {
		return nil
	}
	var st deviceStaging
	defer func() {
		if cerr := st.finish(e); err == nil {
			err = cerr
		}
	}()
	used := vals[:offsets[len(out)]]
	dvals, err := stageOnDevice(e, &st, used, len(used))
	if err != nil {
		return err
	}
	doff, err := stageOnDevice(e, &st, offsets, len(offsets))
	if err != nil {
		return err
	}
	dout, err := stageOnDevice[T](e, &st, nil, len(out))
	if err != nil {
		return err
	}
	e.mu.Lock()
	err = devSegmaxLocked(e, dvals, doff, len(out), dout)
	e.mu.Unlock()
	if err != nil {
		return err
	}
	return dout.Read(e.Stream(), 0, out)
}
