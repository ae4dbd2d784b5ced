package hashindex

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// DevJobs is a batch of insert or delete jobs in device memory, grouped by
// partition: the jobs of a partition form one run, in batch order, and
// run r is jobs [Starts[r], Starts[r+1]). Runs may be empty: UploadJobs
// gives one run per partition that has jobs (as Group), DevGroup one run
// per partition. There are at most Partitions() runs.
type DevJobs struct {
	Hashes *gpu.Buffer[uint64] // key hashes, partition order
	Locs   *gpu.Buffer[uint32] // locations, partition order
	Order  *gpu.Buffer[uint32] // batch index of each job
	Starts *gpu.Buffer[uint32] // run offsets: Runs()+1 non-decreasing entries, the last Len()
}

// Len returns the number of jobs.
func (j DevJobs) Len() int { return j.Hashes.Len() }

// Runs returns the number of runs.
func (j DevJobs) Runs() int { return j.Starts.Len() - 1 }

// Free releases the buffers (for DevJobs made by UploadJobs or AllocJobs).
func (j DevJobs) Free() error {
	return errors.Join(j.Hashes.Free(), j.Locs.Free(), j.Order.Free(), j.Starts.Free())
}

// UploadJobs copies grouped jobs (see Group) to new device buffers,
// synchronously. It fails on the CPU engine. Cost: four allocations and
// copies of the batch.
func (ix *Index) UploadJobs(j Jobs) (DevJobs, error) {
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	e, err := ix.gpuEngine("upload jobs")
	if err != nil {
		return DevJobs{}, err
	}
	if len(j.Starts) < 1 || j.Runs() > ix.geo.parts || len(j.Locs) != j.Len() || len(j.Order) != j.Len() {
		return DevJobs{}, errors.New("hashindex: upload jobs: malformed jobs")
	}
	var d DevJobs
	if d.Hashes, err = gpu.Upload(e.dev, j.Hashes); err == nil {
		if d.Locs, err = gpu.Upload(e.dev, j.Locs); err == nil {
			if d.Order, err = gpu.Upload(e.dev, j.Order); err == nil {
				d.Starts, err = gpu.Upload(e.dev, j.Starts)
			}
		}
	}
	if err != nil {
		d.Free()
		return DevJobs{}, fmt.Errorf("hashindex: upload jobs: %w", err)
	}
	return d, nil
}

// DevSearch queues on Stream() the search of hashes[0:n] into out[0:n]
// (location or NotFound) and returns without waiting. Stats are not
// updated. It fails on the CPU engine. Cost: one kernel, one 8-lane unit
// per job.
func (ix *Index) DevSearch(hashes *gpu.Buffer[uint64], n int, out *gpu.Buffer[uint32]) error {
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	e, err := ix.gpuEngine("dev search")
	if err != nil {
		return err
	}
	if hashes == nil || out == nil {
		return errors.New("hashindex: dev search: nil buffer")
	}
	if n < 0 || n > MaxBatch || hashes.Len() < n || out.Len() < n {
		return fmt.Errorf("hashindex: dev search: %d jobs with %d hashes and %d outputs", n, hashes.Len(), out.Len())
	}
	if n == 0 {
		return nil
	}
	if err := e.launchSearch(hashes, n, out); err != nil {
		return fmt.Errorf("hashindex: dev search: %w", err)
	}
	return nil
}

// DevInsert queues on Stream() the insert of grouped jobs, writing job i's
// result to results[j.Order[i]] (reason<<32 | loc, 0 when nothing was
// dropped; see DecodeInsertResults), and returns without waiting. Stats
// are not updated. It fails on the CPU engine. Cost: one kernel, one 8-lane
// unit per run applying its jobs in order.
func (ix *Index) DevInsert(j DevJobs, results *gpu.Buffer[uint64]) error {
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	e, err := ix.gpuEngine("dev insert")
	if err != nil {
		return err
	}
	if results == nil {
		return errors.New("hashindex: dev insert: nil results buffer")
	}
	if err := ix.checkDevJobs(j, results.Len()); err != nil {
		return fmt.Errorf("hashindex: dev insert: %w", err)
	}
	if err := e.launchInsert(j, results, 0); err != nil {
		return fmt.Errorf("hashindex: dev insert: %w", err)
	}
	return nil
}

// DevDelete queues on Stream() the delete of grouped jobs, writing 1 to
// found[j.Order[i]] when job i found its cell, else 0, and returns without
// waiting. Stats are not updated. It fails on the CPU engine. Cost: as
// DevInsert.
func (ix *Index) DevDelete(j DevJobs, found *gpu.Buffer[uint32]) error {
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	e, err := ix.gpuEngine("dev delete")
	if err != nil {
		return err
	}
	if found == nil {
		return errors.New("hashindex: dev delete: nil found buffer")
	}
	if err := ix.checkDevJobs(j, found.Len()); err != nil {
		return fmt.Errorf("hashindex: dev delete: %w", err)
	}
	if err := e.launchDelete(j, found); err != nil {
		return fmt.Errorf("hashindex: dev delete: %w", err)
	}
	return nil
}

// checkDevJobs checks the buffer sizes of device jobs with outputs outputs.
// The contents (offsets, order) are trusted.
func (ix *Index) checkDevJobs(j DevJobs, outputs int) error {
	if j.Hashes == nil || j.Locs == nil || j.Order == nil || j.Starts == nil {
		return errors.New("nil job buffer")
	}
	n := j.Hashes.Len()
	if n > MaxBatch || j.Locs.Len() < n || j.Order.Len() < n || outputs < n ||
		j.Starts.Len() < 1 || j.Runs() > ix.geo.parts {
		return fmt.Errorf("malformed job buffers: %d hashes, %d locs, %d order, %d starts, %d outputs, %d partitions",
			n, j.Locs.Len(), j.Order.Len(), j.Starts.Len(), outputs, ix.geo.parts)
	}
	return nil
}

// Stream returns the stream all the index's device work is queued on (nil
// on the CPU engine). Record events on it to time Dev* calls.
func (ix *Index) Stream() *gpu.Stream {
	if ix.gpu == nil {
		return nil
	}
	return ix.gpu.stream
}

// Device returns the GPU the index lives on, or nil on the CPU engine.
func (ix *Index) Device() *gpu.Device {
	if ix.gpu == nil {
		return nil
	}
	return ix.gpu.dev
}

// gpuEngine returns the GPU engine, or an error naming op on the CPU
// engine or after Close. Callers hold the index's lock.
func (ix *Index) gpuEngine(op string) (*gpuEngine, error) {
	if ix.gpu == nil {
		return nil, fmt.Errorf("hashindex: %s: the index runs on the cpu engine, need gpu", op)
	}
	if !engine.Live(&ix.Facade) {
		return nil, engine.Closed(&ix.Facade, op)
	}
	return ix.gpu, nil
}
