package btree

import (
	"errors"
	"time"

	"warpkv/gpu"
)

// BatchTimes is the time breakdown of the last batch that changed or read
// the tree (Build, Insert, Delete, Lookup or Get). On the GPU engine the
// phases are measured with CUDA events on the tree's stream (device time);
// on the CPU engine with host timers, and Upload and Download are 0.
// Where the GPU engine overlaps phases, the overlapped time goes to one of
// them: a large Build or Insert counts only the keys' upload in Upload and
// the values' upload (overlapping the sort) in Sort; a large Lookup
// (pipelined in chunks) reports its whole device span as Work.
type BatchTimes struct {
	Op       string        // "build", "insert", "delete", "lookup"
	Keys     int           // keys in the batch
	Upload   time.Duration // host to device copies (0 on the CPU engine)
	Sort     time.Duration // sorting and deduplicating the batch
	Work     time.Duration // everything else on the engine (search, merge, split, propagate; lookups)
	Download time.Duration // device to host copies (0 on the CPU engine)
	Total    time.Duration // the whole call as the caller saw it
}

// LastBatch returns the breakdown of the most recent batch. Cost: O(1).
func (t *Tree) LastBatch() BatchTimes {
	t.lastMu.Lock()
	defer t.lastMu.Unlock()
	return t.last
}

// setLast records the breakdown of a finished batch. Cost: O(1).
func (t *Tree) setLast(b BatchTimes) {
	t.lastMu.Lock()
	t.last = b
	t.lastMu.Unlock()
}

// cpuTimes is the breakdown of a CPU engine batch that started at t0 and
// finished sorting at sorted (the zero time: no sort). Cost: O(1).
func cpuTimes(op string, keys int, t0, sorted time.Time) BatchTimes {
	total := time.Since(t0)
	b := BatchTimes{Op: op, Keys: keys, Total: total, Work: total}
	if !sorted.IsZero() {
		b.Sort = sorted.Sub(t0)
		b.Work = total - b.Sort
	}
	return b
}

// Phase boundaries of a GPU batch, marked by CUDA events on the stream:
// before the upload, after it, after the sort, after the work, after the
// download. A batch without a phase marks its two boundaries at the same
// point.
const (
	markStart = iota
	markUploaded
	markSorted
	markWorked
	markDone
	numMarks
)

// gpuClock holds the events of the phase boundaries of one GPU batch.
type gpuClock struct {
	ev  [numMarks]*gpu.Event
	set [numMarks]bool
}

// newGPUClock creates the events. Cost: numMarks cuEventCreate.
func newGPUClock(d *gpu.Device) (*gpuClock, error) {
	c := &gpuClock{}
	for i := range c.ev {
		e, err := d.NewEvent()
		if err != nil {
			return nil, errors.Join(err, c.close())
		}
		c.ev[i] = e
	}
	return c, nil
}

// reset forgets the marks of the previous batch. Cost: O(1).
func (c *gpuClock) reset() { c.set = [numMarks]bool{} }

// mark records boundary i on s; a failed record only loses the timing.
// Cost: one cuEventRecord.
func (c *gpuClock) mark(s *gpu.Stream, i int) {
	c.set[i] = c.ev[i].Record(s) == nil
}

// times fills the phases of b from the marks; the stream must have passed
// the last mark (callers synchronize first). A phase whose boundaries were
// not both marked is 0. Cost: up to numMarks-1 cuEventElapsedTime.
func (c *gpuClock) times(b *BatchTimes) {
	phase := func(i int) time.Duration {
		// A boundary not marked takes the closest marked one before it.
		a := i
		for a >= 0 && !c.set[a] {
			a--
		}
		z := i + 1
		if a < 0 || !c.set[z] {
			return 0
		}
		d, err := gpu.Elapsed(c.ev[a], c.ev[z])
		if err != nil || d < 0 {
			return 0
		}
		return d
	}
	b.Upload = phase(markStart)
	b.Sort = phase(markUploaded)
	b.Work = phase(markSorted)
	b.Download = phase(markWorked)
}

// close destroys the events. Cost: numMarks cuEventDestroy.
func (c *gpuClock) close() error {
	var err error
	for _, e := range c.ev {
		if e != nil {
			err = errors.Join(err, e.Close())
		}
	}
	return err
}
