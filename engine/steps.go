package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// StepTrace profiles the steps of one batch of a GPU engine, for the
// benchmarks that ask where a batch's time goes: every Mark records a
// CUDA event on the engine's stream and the host time, and Synced counts
// the host synchronizations (readbacks) between marks. Its methods do
// nothing on a nil *StepTrace, so an engine keeps a nil one by default
// and marks its steps unconditionally. Not safe for concurrent use (the
// engine's lock serializes its batches).
type StepTrace struct {
	names []string
	ev    []*gpu.Event // reused across batches: ev[i] is mark i's event
	host  []time.Time
	syncs []int // host synchronizations before mark i
	sync  int
	t0    time.Time
	err   error
}

// Step is one step of a finished trace: the device time from the previous
// mark (the stream reaching this one), the device time since the first
// mark, the host time from the previous mark, and the host
// synchronizations in between.
type Step struct {
	Name       string
	Device     time.Duration
	DeviceFrom time.Duration
	Host       time.Duration
	Syncs      int
}

// Start forgets the previous batch's marks and starts its host clock.
// Cost: O(1).
func (t *StepTrace) Start() {
	if t == nil {
		return
	}
	t.names, t.host, t.syncs, t.sync, t.err = t.names[:0], t.host[:0], t.syncs[:0], 0, nil
	t.t0 = time.Now()
}

// Began returns the host time of the last Start (zero on a nil trace).
// Cost: O(1).
func (t *StepTrace) Began() time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.t0
}

// Mark records the end of step name on s: an event of d (created on first
// use, then reused) and the host time. A failure is kept for Steps. Cost:
// one cuEventRecord.
func (t *StepTrace) Mark(d *gpu.Device, s *gpu.Stream, name string) {
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

// Synced counts one host synchronization. Cost: O(1).
func (t *StepTrace) Synced() {
	if t != nil {
		t.sync++
	}
}

// Steps returns the steps since Start; the stream must have passed the
// last mark. The first step's device time is 0 (device times are measured
// from the first mark); its host time runs from Start. Cost: two
// cuEventElapsedTime per step.
func (t *StepTrace) Steps() ([]Step, error) {
	if t.err != nil {
		return nil, t.err
	}
	out := make([]Step, 0, len(t.names))
	for i, n := range t.names {
		st := Step{Name: n, Syncs: t.syncs[i]}
		if i == 0 {
			st.Host = t.host[0].Sub(t.t0)
			out = append(out, st)
			continue
		}
		d, err := gpu.Elapsed(t.ev[i-1], t.ev[i])
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", n, err)
		}
		from, err := gpu.Elapsed(t.ev[0], t.ev[i])
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", n, err)
		}
		st.Device, st.DeviceFrom, st.Host = d, from, t.host[i].Sub(t.host[i-1])
		st.Syncs = t.syncs[i] - t.syncs[i-1]
		out = append(out, st)
	}
	return out, nil
}

// Close destroys the trace's events. Cost: one cuEventDestroy per event.
func (t *StepTrace) Close() error {
	if t == nil {
		return nil
	}
	var err error
	for _, e := range t.ev {
		err = errors.Join(err, e.Close())
	}
	t.ev = nil
	return err
}

// FormatSteps renders steps as a table in milliseconds, with totals: each
// step's device time, the device time at its end, its host time and its
// host synchronizations. Cost: O(steps).
func FormatSteps(steps []Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s %9s %9s %9s %6s\n", "step", "device", "at", "host", "syncs")
	var dev, host time.Duration
	syncs := 0
	for _, s := range steps {
		fmt.Fprintf(&b, "%-26s %9.3f %9.3f %9.3f %6d\n", s.Name, millis(s.Device), millis(s.DeviceFrom), millis(s.Host), s.Syncs)
		dev, host, syncs = dev+s.Device, host+s.Host, syncs+s.Syncs
	}
	fmt.Fprintf(&b, "%-26s %9.3f %9s %9.3f %6d\n", "total", millis(dev), "", millis(host), syncs)
	return b.String()
}

// millis is d in milliseconds.
func millis(d time.Duration) float64 { return float64(d) / 1e6 }
