package hashindex

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// DevGroup queues on Stream() the grouping by partition of the jobs
// (hashes[i], locs[i]), i < n, into dst, and returns dst cut to n jobs and
// one run per partition: Starts holds Partitions()+1 offsets, partitions
// without jobs having empty runs. Within a partition the jobs keep their
// batch order, so DevInsert or DevDelete of the result equals Insert or
// Delete of the batch. dst must hold n jobs and Partitions()+1 offsets
// (AllocJobs). It fails on the CPU engine. Cost: up to 4096 jobs, a
// bitonic sort in shared memory in one block; more, a pass writing each
// job's partition, a stable radix sort of (partition, job) pairs over the
// partition-number bits (8 bits a pass, 8 bytes a job of scratch) and a
// gather of the hashes and locations; then a binary search per partition.
// Scratch: 4 bytes a job.
func (ix *Index) DevGroup(hashes *gpu.Buffer[uint64], locs *gpu.Buffer[uint32], n int, dst DevJobs) (DevJobs, error) {
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	e, err := ix.gpuEngine("dev group")
	if err != nil {
		return DevJobs{}, err
	}
	if hashes == nil || locs == nil || dst.Hashes == nil || dst.Locs == nil || dst.Order == nil || dst.Starts == nil {
		return DevJobs{}, errors.New("hashindex: dev group: nil buffer")
	}
	parts := ix.geo.parts
	if n < 0 || n > MaxBatch || hashes.Len() < n || locs.Len() < n || dst.Hashes.Len() < n || dst.Locs.Len() < n ||
		dst.Order.Len() < n || dst.Starts.Len() < parts+1 {
		return DevJobs{}, fmt.Errorf("hashindex: dev group: %d jobs with %d hashes, %d locs; destination of %d hashes, %d locs, %d order, %d starts for %d partitions",
			n, hashes.Len(), locs.Len(), dst.Hashes.Len(), dst.Locs.Len(), dst.Order.Len(), dst.Starts.Len(), parts)
	}
	keys, err := gpu.Get[uint32](e.pool, bufKeys, n)
	if err != nil {
		return DevJobs{}, fmt.Errorf("hashindex: dev group: key scratch: %w", err)
	}
	out := cutJobs(dst, n, parts)
	if err := e.groupOnDevice(hashes, locs, n, out, keys); err != nil {
		return DevJobs{}, fmt.Errorf("hashindex: dev group: %w", err)
	}
	return out, nil
}

// AllocJobs allocates device buffers for n grouped jobs with one run per
// partition, the shape DevGroup writes; free them with DevJobs.Free. It
// fails on the CPU engine. Cost: four allocations, 16 bytes a job and 4 a
// partition.
func (ix *Index) AllocJobs(n int) (DevJobs, error) {
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	e, err := ix.gpuEngine("alloc jobs")
	if err != nil {
		return DevJobs{}, err
	}
	if n < 0 || n > MaxBatch {
		return DevJobs{}, fmt.Errorf("hashindex: alloc jobs: %d jobs", n)
	}
	var j DevJobs
	if j.Hashes, err = gpu.Alloc[uint64](e.dev, n); err == nil {
		if j.Locs, err = gpu.Alloc[uint32](e.dev, n); err == nil {
			if j.Order, err = gpu.Alloc[uint32](e.dev, n); err == nil {
				j.Starts, err = gpu.Alloc[uint32](e.dev, ix.geo.parts+1)
			}
		}
	}
	if err != nil {
		j.Free()
		return DevJobs{}, fmt.Errorf("hashindex: alloc jobs: %w", err)
	}
	return j, nil
}

// cutJobs returns views of the first n jobs and parts+1 offsets of j.
func cutJobs(j DevJobs, n, parts int) DevJobs {
	return DevJobs{
		Hashes: gpu.View[uint64](j.Hashes, 0, n), Locs: gpu.View[uint32](j.Locs, 0, n),
		Order: gpu.View[uint32](j.Order, 0, n), Starts: gpu.View[uint32](j.Starts, 0, parts+1),
	}
}

// groupOnDevice queues the grouping of n jobs into dst (Hashes, Locs and
// Order of n jobs, Starts of parts+1 offsets), using keys (n words) for
// the sorted partition numbers: up to smallGroupMax jobs with
// hix_group_small, more with the radix sort. See group.cu.
func (e *gpuEngine) groupOnDevice(hashes *gpu.Buffer[uint64], locs *gpu.Buffer[uint32], n int, dst DevJobs, keys *gpu.Buffer[uint32]) error {
	k, err := e.kernels()
	if err != nil {
		return err
	}
	g := e.geo
	block := gpu.D1(groupBlock)
	if n <= smallGroupMax {
		size := 1 << bits.Len(uint(max(n, 1)-1)) // a power of two >= n
		if err := k.groupSmall.Launch(e.stream, gpu.D1(1), gpu.D1(smallGroupThreads), 0,
			hashes, locs, uint32(n), uint32(size), g.mask, uint32(g.pbits), dst.Hashes, dst.Locs, dst.Order, keys); err != nil {
			return err
		}
	} else {
		grid := gpu.D1(gpu.Grid(n, groupBlock))
		if err := k.groupKeys.Launch(e.stream, grid, block, 0, hashes, uint32(n), g.mask, uint32(g.pbits), keys, dst.Order); err != nil {
			return err
		}
		if err := prim.DevSortPairsBits(e.prim, keys, dst.Order, n, 0, int(log2(g.parts))); err != nil {
			return err
		}
		if err := k.groupGather.Launch(e.stream, grid, block, 0, hashes, locs, dst.Order, uint32(n), dst.Hashes, dst.Locs); err != nil {
			return err
		}
	}
	return k.groupStarts.Launch(e.stream, gpu.D1(gpu.Grid(g.parts+1, groupBlock)), block, 0,
		keys, uint32(n), uint32(g.parts), dst.Starts)
}

// jobsLayout places m grouped jobs with one run per partition, and their
// partition keys, in a byte buffer: byte offsets of each array and the
// total size.
type jobsLayout struct{ hashes, locs, order, keys, starts, end int }

func newJobsLayout(m, parts int) jobsLayout {
	var l jobsLayout
	l.locs = alignUp(8 * m)
	l.order = l.locs + alignUp(4*m)
	l.keys = l.order + alignUp(4*m)
	l.starts = l.keys + alignUp(4*m)
	l.end = l.starts + alignUp(4*(parts+1))
	return l
}

// groupChunk queues the grouping of a chunk of a host-level call into the
// engine's job scratch and returns the grouped jobs.
func (e *gpuEngine) groupChunk(c chunk) (DevJobs, error) {
	parts := e.geo.parts
	l := newJobsLayout(c.n, parts)
	b := gpu.Take[byte](e.pool, bufJobs, l.end) // reserved by hostCall
	j := DevJobs{
		Hashes: gpu.View[uint64](b, l.hashes, c.n), Locs: gpu.View[uint32](b, l.locs, c.n),
		Order: gpu.View[uint32](b, l.order, c.n), Starts: gpu.View[uint32](b, l.starts, parts+1),
	}
	return j, e.groupOnDevice(c.hashes, c.locs, c.n, j, gpu.View[uint32](b, l.keys, c.n))
}
