package engine

import (
	"errors"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// Phase boundaries of a batch, in order. A batch without a phase marks its
// two boundaries at the same point (or not at all).
const (
	MarkStart    = iota // before the upload
	MarkUploaded        // after the upload
	MarkSorted          // after the sort
	MarkWorked          // after the engine's work
	MarkDone            // after the download
	numMarks
)

// Clock measures the phases of one batch: with CUDA events recorded on a
// stream on the GPU backend (NewGPUClock), with host timers on the CPU
// backend (a zero Clock). Not safe for concurrent use.
type Clock struct {
	ev   [numMarks]*gpu.Event
	set  [numMarks]bool
	host [numMarks]time.Time
	t0   time.Time
}

// NewGPUClock creates the events of a GPU clock on d. Cost: numMarks
// cuEventCreate.
func NewGPUClock(d *gpu.Device) (*Clock, error) {
	c := &Clock{}
	for i := range c.ev {
		e, err := d.NewEvent()
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		c.ev[i] = e
	}
	return c, nil
}

// Start forgets the marks of the previous batch and starts the host timer of
// Total. Cost: O(1).
func (c *Clock) Start() {
	c.set = [numMarks]bool{}
	c.t0 = time.Now()
}

// Mark records boundary i: an event on s for a GPU clock (a failed record
// only loses the timing), the host time otherwise. Cost: one cuEventRecord
// or one time.Now.
func (c *Clock) Mark(s *gpu.Stream, i int) {
	if c.ev[i] != nil {
		c.set[i] = c.ev[i].Record(s) == nil
		return
	}
	c.host[i] = time.Now()
	c.set[i] = true
}

// Timings returns the breakdown of the batch since Start. For a GPU clock the
// stream must have passed the last mark (callers synchronize first). A phase
// whose end was not marked is 0; a phase whose start was not marked starts at
// the closest marked boundary before it. Cost: up to numMarks-1
// cuEventElapsedTime.
func (c *Clock) Timings(op string, items int) Timings {
	phase := func(i int) time.Duration {
		a := i
		for a >= 0 && !c.set[a] {
			a--
		}
		z := i + 1
		if a < 0 || !c.set[z] {
			return 0
		}
		if c.ev[a] != nil {
			d, err := gpu.Elapsed(c.ev[a], c.ev[z])
			if err != nil || d < 0 {
				return 0
			}
			return d
		}
		return c.host[z].Sub(c.host[a])
	}
	return Timings{
		Op: op, Items: items,
		Upload: phase(MarkStart), Sort: phase(MarkUploaded), Work: phase(MarkSorted), Download: phase(MarkWorked),
		Total: time.Since(c.t0),
	}
}

// Since returns the host time since Start: Timings' Total now. Cost: one
// time.Now.
func (c *Clock) Since() time.Duration { return time.Since(c.t0) }

// Close destroys a GPU clock's events. Cost: numMarks cuEventDestroy.
func (c *Clock) Close() error {
	var err error
	for i, e := range c.ev {
		if e != nil {
			err = errors.Join(err, e.Close())
			c.ev[i] = nil
		}
	}
	return err
}
