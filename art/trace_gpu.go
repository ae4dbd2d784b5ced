package art

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// stepTrace profiles the steps of one batch of the GPU engine, for the
// benchmarks that ask where a structural batch's time goes: every step
// mark records a CUDA event on the engine's stream and the host time, and
// the trace counts the host synchronizations (readbacks) between marks.
// An engine without a trace (the default) records nothing. Not safe for
// concurrent use; the engine's mutex serializes it.
type stepTrace struct {
	names []string
	ev    []*gpu.Event // reused across batches: ev[i] is mark i's event
	host  []time.Time
	syncs []int // host synchronizations before mark i
	sync  int
	t0    time.Time
	err   error
}

// traceStep is one step of a finished trace: the device time from the
// previous mark (the stream reaching this one), the device time since the
// first mark, the host time from the previous mark, and the host
// synchronizations in between.
type traceStep struct {
	Name       string
	Device     time.Duration
	DeviceFrom time.Duration
	Host       time.Duration
	Syncs      int
}

// start forgets the previous batch's marks. Cost: O(1); nothing on a nil
// trace.
func (t *stepTrace) start() {
	if t == nil {
		return
	}
	t.names, t.host, t.syncs, t.sync, t.err = t.names[:0], t.host[:0], t.syncs[:0], 0, nil
	t.t0 = time.Now()
}

// mark records the end of step name on s: an event (created on first
// use) and the host time. Cost: one cuEventRecord; nothing on a nil trace.
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

// synced counts one host synchronization. Nil-safe.
func (t *stepTrace) synced() {
	if t != nil {
		t.sync++
	}
}

// steps returns the steps since start; the stream must have passed the
// last mark. The first step's device time is 0 (it is measured from the
// first mark); its host time runs from start.
func (t *stepTrace) steps() ([]traceStep, error) {
	if t.err != nil {
		return nil, t.err
	}
	out := make([]traceStep, 0, len(t.names))
	for i, n := range t.names {
		st := traceStep{Name: n, Syncs: t.syncs[i]}
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

// close destroys the trace's events.
func (t *stepTrace) close() error {
	var err error
	for _, e := range t.ev {
		err = errors.Join(err, e.Close())
	}
	t.ev = nil
	return err
}

// formatSteps renders steps as a table in milliseconds, with totals: the
// device time of each step, the device time at its end, its host time and
// its host synchronizations.
func formatSteps(steps []traceStep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s %9s %9s %9s %6s\n", "step", "device", "at", "host", "syncs")
	var dev, host time.Duration
	syncs := 0
	for _, s := range steps {
		fmt.Fprintf(&b, "%-26s %9.3f %9.3f %9.3f %6d\n", s.Name, msOf(s.Device), msOf(s.DeviceFrom), msOf(s.Host), s.Syncs)
		dev, host, syncs = dev+s.Device, host+s.Host, syncs+s.Syncs
	}
	fmt.Fprintf(&b, "%-26s %9.3f %9s %9.3f %6d\n", "total", msOf(dev), "", msOf(host), syncs)
	return b.String()
}

// msOf is d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

// step marks the end of step name of the batch in progress when the
// engine is traced (benchmarks and tests); nothing otherwise.
func (g *gpuEngine) step(name string) { g.trace.mark(g.dev, g.s, name) }

// stepN is step with the name format(i), formatted only when traced.
func (g *gpuEngine) stepN(format string, i int) {
	if g.trace != nil {
		g.step(fmt.Sprintf(format, i))
	}
}
