package btree

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// stepTrace is a profile of the steps of one batch of the GPU engine, for
// the benchmarks that ask where a batch's time goes: at every step mark
// it records a CUDA event on the tree's stream and the host time, and it
// counts the host synchronizations (readbacks). A gpuTree without a trace
// (the default) records nothing. Not safe for concurrent use; the tree's
// mutex serializes it.
type stepTrace struct {
	names []string
	ev    []*gpu.Event // pooled: ev[i] is step i's event
	host  []time.Time
	syncs []int // host synchronizations before step i
	sync  int   // synchronizations so far
	t0    time.Time
	err   error
}

// traceStep is one step of a finished trace: the device time since the
// previous mark (the stream reaching it), the host time since the previous
// mark, and the host synchronizations in between.
type traceStep struct {
	Name       string
	Device     time.Duration
	Host       time.Duration
	HostSyncs  int
	DeviceFrom time.Duration // device time of the mark since the first
}

// start forgets the previous batch's marks. Cost: O(1).
func (t *stepTrace) start() {
	if t == nil {
		return
	}
	t.names, t.host, t.syncs, t.sync, t.err = t.names[:0], t.host[:0], t.syncs[:0], 0, nil
	t.t0 = time.Now()
}

// mark records step name's end on s: an event (created on first use) and
// the host time. Cost: one cuEventRecord, nothing on a nil trace.
func (t *stepTrace) mark(d *gpu.Device, s *gpu.Stream, name string) {
	if t == nil || t.err != nil {
		return
	}
	i := len(t.names)
	if i == len(t.ev) {
		e, err := d.NewEvent()
		if err != nil {
			t.err = err
			return
		}
		t.ev = append(t.ev, e)
	}
	if err := t.ev[i].Record(s); err != nil {
		t.err = err
		return
	}
	t.names = append(t.names, name)
	t.host = append(t.host, time.Now())
	t.syncs = append(t.syncs, t.sync)
}

// synced counts one host synchronization (a readback). Nil-safe.
func (t *stepTrace) synced() {
	if t != nil {
		t.sync++
	}
}

// steps returns the steps since start; the stream must have passed the
// last mark. The first step is measured from the first mark.
func (t *stepTrace) steps() ([]traceStep, error) {
	if t.err != nil {
		return nil, t.err
	}
	out := make([]traceStep, 0, len(t.names))
	for i, n := range t.names {
		st := traceStep{Name: n}
		if i > 0 {
			d, err := gpu.Elapsed(t.ev[i-1], t.ev[i])
			if err != nil {
				return nil, err
			}
			from, err := gpu.Elapsed(t.ev[0], t.ev[i])
			if err != nil {
				return nil, err
			}
			st.Device, st.DeviceFrom = d, from
			st.Host = t.host[i].Sub(t.host[i-1])
			st.HostSyncs = t.syncs[i] - t.syncs[i-1]
		} else {
			st.Host = t.host[0].Sub(t.t0)
		}
		out = append(out, st)
	}
	return out, nil
}

// close destroys the trace's events.
func (t *stepTrace) close() error {
	var err error
	for _, e := range t.ev {
		err = errors.Join(err, e.Close())
	}
	t.ev = nil
	return err
}

// formatSteps renders steps as a table (milliseconds), with totals.
func formatSteps(steps []traceStep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %9s %9s %9s %6s\n", "step", "device", "at", "host", "syncs")
	var dev, host time.Duration
	syncs := 0
	for _, s := range steps {
		fmt.Fprintf(&b, "%-28s %9.3f %9.3f %9.3f %6d\n", s.Name, ms(s.Device), ms(s.DeviceFrom), ms(s.Host), s.HostSyncs)
		dev += s.Device
		host += s.Host
		syncs += s.HostSyncs
	}
	fmt.Fprintf(&b, "%-28s %9.3f %9s %9.3f %6d\n", "total", ms(dev), "", ms(host), syncs)
	return b.String()
}

// ms is d in milliseconds.
func ms[D ~int64](d D) float64 { return float64(d) / 1e6 }

// step marks the end of step name of the batch in progress when the tree
// is traced (tests and benchmarks); nothing otherwise.
func (g *gpuTree) step(name string) { g.trace.mark(g.dev, g.s, name) }

// setStageWorkers replaces the pinned staging rings by rings whose chunks
// are copied on w goroutines (benchmarks compare stageWorkers with
// others). Cost: closing the old rings (freeing their pinned memory).
func (g *gpuTree) setStageWorkers(w int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := errors.Join(g.s.Synchronize(), g.up.Close(), g.down.Close()); err != nil {
		return err
	}
	c := stageConfig
	c.Workers = w
	g.up, g.down = gpu.NewPipeline(g.dev, c), gpu.NewPipeline(g.dev, c)
	return nil
}
