package hashindex

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// gpuEngine keeps the table in device memory. All its kernels are queued
// on one stream, the stream of its prim engine (which runs the radix sort
// of the device-side grouping), so the table and the scratch buffers are
// used in order without further synchronization; pipelined host-level
// calls add two streams for their transfers (see hostCall). A host-level
// call stages its batch through pinned memory (its own, or a Staging's),
// groups insert and delete jobs by partition on the device (DevGroup),
// launches the kernels and synchronizes once per chunk.
type gpuEngine struct {
	geo     geometry
	maxDisp uint32
	workers int

	dev        *gpu.Device
	prim       *prim.Engine
	stream     *gpu.Stream // prim.Stream(): every kernel
	copyStream *gpu.Stream // transfers in of pipelined host-level calls
	outStream  *gpu.Stream // transfers out of pipelined host-level calls
	table      *gpu.Buffer[uint32]
	k          *kernelSet // compiled on first use

	pool     *gpu.Pool         // device staging, job and key scratch, pinned staging (bufStage ...)
	devStage *gpu.Buffer[byte] // the device staging of the call in progress
	pipe     *gpu.Pipeline     // schedules the chunks of host-level calls (hostCall)

	updCounts *gpu.MappedBuffer[uint32] // hix_update_small's per-block counts (update_gpu.go), allocated on first use

	chunkJobs       int // most jobs of one chunk of a slice call: pipeChunk (tests lower it)
	stagedChunkJobs int // most jobs of one chunk of a staged call: stagedChunk (tests lower it)
}

// newGPUEngine allocates and clears the table on d (the caller keeps the
// device).
func newGPUEngine(r resolved, d *gpu.Device, workers int) (*gpuEngine, error) {
	pe, err := prim.NewGPU(d)
	if err != nil {
		return nil, err
	}
	e := &gpuEngine{
		geo: r.geo, maxDisp: r.maxDisp, workers: workers, dev: d,
		prim: pe, stream: pe.Stream(), chunkJobs: pipeChunk, stagedChunkJobs: stagedChunk,
		pool: gpu.NewPool(d, pe.Stream()), pipe: gpu.NewPipeline(d, gpu.PipelineConfig{}),
	}
	e.pool.SetHeadroom(withHeadroom)
	if e.copyStream, err = d.NewStream(); err == nil {
		if e.outStream, err = d.NewStream(); err == nil {
			if e.table, err = gpu.Alloc[uint32](d, r.geo.words()); err != nil {
				err = fmt.Errorf("table of %d buckets: %w", r.geo.buckets, err)
			} else {
				err = e.reset()
			}
		}
	}
	if err != nil {
		_ = errors.Join(e.table.Free(), e.outStream.Close(), e.copyStream.Close(), pe.Close()) // best effort: err says what failed
		return nil, err
	}
	return e, nil
}

// kernels returns the compiled kernels, compiling them on first use.
func (e *gpuEngine) kernels() (*kernelSet, error) {
	if e.k == nil {
		k, err := loadKernels(e.dev)
		if err != nil {
			return nil, err
		}
		e.k = k
	}
	return e.k, nil
}

func (e *gpuEngine) search(hashes []uint64, out []uint32) (hits int, err error) {
	err = e.hostCall(hostBatch{n: len(hashes), hashes: hashes}, 4, false, func(c chunk) error {
		return e.launchSearch(c.hashes, c.n, devOut[uint32](e, c))
	}, func(c chunk) {
		hits += copyHits(out[c.first:c.first+c.n], viewAs[uint32](c.hostOut, 0, c.n), e.workers)
	})
	return hits, err
}

func (e *gpuEngine) insert(hashes []uint64, locs []uint32, done func(first int, results []uint64)) error {
	return e.hostCall(hostBatch{n: len(hashes), withLocs: true, hashes: hashes, locs: locs}, 8, true, e.insertChunk,
		func(c chunk) { e.insertDone(c, done) })
}

func (e *gpuEngine) remove(hashes []uint64, locs []uint32, done func(first int, found []uint32)) error {
	return e.hostCall(hostBatch{n: len(hashes), withLocs: true, hashes: hashes, locs: locs}, 4, false, func(c chunk) error {
		_, err := e.removeChunk(c)
		return err
	}, func(c chunk) { done(c.first, viewAs[uint32](c.hostOut, 0, c.n)) })
}

// The staged calls count hits on the device (hix_count after each chunk's
// kernel) rather than in a pass over the outputs on the host.

func (e *gpuEngine) searchStaged(st *Staging, n int) (hits int, err error) {
	err = e.hostCall(hostBatch{n: n, st: st}, 4, true, func(c chunk) error {
		out := devOut[uint32](e, c)
		if err := e.launchSearch(c.hashes, c.n, out); err != nil {
			return err
		}
		return e.launchCount(out, c.n, NotFound, devCount(e, c))
	}, func(c chunk) { hits += int(c.hostCount[0]) })
	return hits, err
}

func (e *gpuEngine) insertStaged(st *Staging, n int, check func() error, done func(first int, results []uint64)) error {
	return e.insertStagedAt(st, 0, n, check, done)
}

// insertStagedAt is insertStaged of jobs [off, off+n) of st, their results
// at the same jobs' places; done's first counts from off.
func (e *gpuEngine) insertStagedAt(st *Staging, off, n int, check func() error, done func(first int, results []uint64)) error {
	return e.hostCall(hostBatch{n: n, off: off, withLocs: true, st: st, check: check}, 8, true, e.insertChunk,
		func(c chunk) { e.insertDone(c, done) })
}

func (e *gpuEngine) removeStaged(st *Staging, n int, done func(first int, found []uint32)) (hits int, err error) {
	return e.removeStagedAt(st, 0, n, done)
}

// removeStagedAt is removeStaged of jobs [off, off+n) of st, their flags
// at the same jobs' places; done's first counts from off.
func (e *gpuEngine) removeStagedAt(st *Staging, off, n int, done func(first int, found []uint32)) (hits int, err error) {
	err = e.hostCall(hostBatch{n: n, off: off, withLocs: true, st: st}, 4, true, func(c chunk) error {
		found, err := e.removeChunk(c)
		if err != nil {
			return err
		}
		return e.launchCount(found, c.n, 0, devCount(e, c))
	}, func(c chunk) {
		hits += int(c.hostCount[0])
		if done != nil {
			done(c.first, viewAs[uint32](c.hostOut, 0, c.n))
		}
	})
	return hits, err
}

// insertChunk queues the grouping and the insert of a chunk, its results
// to the chunk's output and its drop count to the chunk's counter.
func (e *gpuEngine) insertChunk(c chunk) error {
	j, err := e.groupChunk(c)
	if err != nil {
		return err
	}
	return e.launchInsert(j, devOut[uint64](e, c), devCount(e, c))
}

// insertDone hands a consumed insert chunk's results to done, unless no
// job of the chunk dropped anything.
func (e *gpuEngine) insertDone(c chunk, done func(first int, results []uint64)) {
	if c.hostCount[0] == 0 {
		return // nothing to decode
	}
	done(c.first, viewAs[uint64](c.hostOut, 0, c.n))
}

// removeChunk queues the grouping and the delete of a chunk and returns
// the device view of its found flags.
func (e *gpuEngine) removeChunk(c chunk) (*gpu.Buffer[uint32], error) {
	j, err := e.groupChunk(c)
	if err != nil {
		return nil, err
	}
	found := devOut[uint32](e, c)
	return found, e.launchDelete(j, found)
}

// launchSearch queues hix_search for n hashes.
func (e *gpuEngine) launchSearch(hashes *gpu.Buffer[uint64], n int, out *gpu.Buffer[uint32]) error {
	k, err := e.kernels()
	if err != nil {
		return err
	}
	return k.search.Launch(e.stream, searchGrid(n), gpu.D1(searchBlock), 0,
		e.table, e.geo.mask, e.geo.pmask, hashes, uint64(n), out)
}

// launchInsert queues hix_insert over grouped jobs; drops, if not 0, is
// the device address of a uint32 counter of the jobs that drop a location.
func (e *gpuEngine) launchInsert(j DevJobs, results *gpu.Buffer[uint64], drops gpu.DevicePtr) error {
	k, err := e.kernels()
	if err != nil {
		return err
	}
	runs := j.Runs()
	return k.insert.Launch(e.stream, updateGrid(runs), gpu.D1(updateBlock), 0,
		e.table, e.geo.mask, e.geo.pmask, e.maxDisp, j.Hashes, j.Locs, j.Order, j.Starts, uint64(runs), results, drops)
}

// launchCount queues hix_count: *count (a device address) grows by the
// number of v[0:n] that are not absent.
func (e *gpuEngine) launchCount(v *gpu.Buffer[uint32], n int, absent uint32, count gpu.DevicePtr) error {
	k, err := e.kernels()
	if err != nil {
		return err
	}
	return k.count.Launch(e.stream, countGrid(n), gpu.D1(countBlock), 0, v, uint64(n), absent, count)
}

// launchDelete queues hix_delete over grouped jobs.
func (e *gpuEngine) launchDelete(j DevJobs, found *gpu.Buffer[uint32]) error {
	k, err := e.kernels()
	if err != nil {
		return err
	}
	runs := j.Runs()
	return k.remove.Launch(e.stream, updateGrid(runs), gpu.D1(updateBlock), 0,
		e.table, e.geo.mask, e.geo.pmask, j.Hashes, j.Locs, j.Order, j.Starts, uint64(runs), found)
}

func (e *gpuEngine) snapshot() ([]uint32, error) {
	out := make([]uint32, e.table.Len())
	if err := e.table.Read(e.stream, 0, out); err != nil {
		return nil, err
	}
	return out, e.stream.Synchronize()
}

func (e *gpuEngine) reset() error {
	if err := e.table.FillBytes(e.stream, 0); err != nil {
		return fmt.Errorf("clearing the table: %w", err)
	}
	return e.stream.Synchronize()
}

func (e *gpuEngine) close() error {
	errs := []error{e.stream.Synchronize(), e.copyStream.Synchronize(), e.outStream.Synchronize(), e.table.Free(),
		e.pool.Free(), e.pipe.Close(), e.updCounts.Free()}
	errs = append(errs, e.copyStream.Close(), e.outStream.Close(), e.prim.Close())
	return errors.Join(errs...)
}
