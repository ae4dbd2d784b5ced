package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// Default repetition counts: warm-up runs are not timed, the median of the
// timed runs is reported.
const (
	DefaultWarmup = 1
	DefaultReps   = 5
)

// Median returns the median of xs (the mean of the two middle values for
// an even count), or 0 for an empty slice. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// TimeCPU runs warmup untimed and reps timed repetitions of run and returns
// the median wall-clock seconds of the timed ones. prepare, if not nil, runs
// before every repetition outside the timed region (for example to restore
// an unsorted input). The first error stops the measurement.
func TimeCPU(warmup, reps int, prepare, run func() error) (float64, error) {
	return medianOfReps(warmup, reps, prepare, func() (float64, error) {
		t0 := time.Now()
		err := run()
		return time.Since(t0).Seconds(), err
	})
}

// medianOfReps runs warmup and then reps timed repetitions of measure,
// which runs the work once and returns its seconds, each after prepare (if
// not nil), and returns the median of the timed ones. The first error
// stops it.
func medianOfReps(warmup, reps int, prepare func() error, measure func() (float64, error)) (float64, error) {
	if reps < 1 {
		return 0, fmt.Errorf("bench: %d timed repetitions", reps)
	}
	times := make([]float64, 0, reps)
	for i := range warmup + reps {
		if prepare != nil {
			if err := prepare(); err != nil {
				return 0, err
			}
		}
		sec, err := measure()
		if err != nil {
			return 0, err
		}
		if i >= warmup {
			times = append(times, sec)
		}
	}
	return Median(times), nil
}

// GPUTimer times device work queued on one stream with a pair of CUDA
// events, so the time is the device's, without host launch overhead.
type GPUTimer struct {
	stream     *gpu.Stream
	start, end *gpu.Event
}

// NewGPUTimer returns a timer for work queued on s. Close it when done.
// Cost: two cuEventCreate.
func NewGPUTimer(d *gpu.Device, s *gpu.Stream) (*GPUTimer, error) {
	start, err := d.NewEvent()
	if err != nil {
		return nil, fmt.Errorf("bench: timer event: %w", err)
	}
	end, err := d.NewEvent()
	if err != nil {
		start.Close()
		return nil, fmt.Errorf("bench: timer event: %w", err)
	}
	return &GPUTimer{stream: s, start: start, end: end}, nil
}

// Time runs warmup untimed and reps timed repetitions of run, which must
// queue its work on the timer's stream, and returns the median device
// seconds between an event recorded before run and one recorded after it.
// prepare, if not nil, queues work before each repetition that is not
// timed (for example a fresh copy of an unsorted input): being on the same
// stream, it completes before the start event. Each repetition waits for
// its end event, so repetitions do not overlap.
func (t *GPUTimer) Time(warmup, reps int, prepare, run func() error) (float64, error) {
	return medianOfReps(warmup, reps, prepare, t.once(run))
}

// once returns a measurement of one run between the timer's two events.
func (t *GPUTimer) once(run func() error) func() (float64, error) {
	return func() (float64, error) {
		if err := t.start.Record(t.stream); err != nil {
			return 0, fmt.Errorf("bench: recording start event: %w", err)
		}
		if err := run(); err != nil {
			return 0, err
		}
		if err := t.end.Record(t.stream); err != nil {
			return 0, fmt.Errorf("bench: recording end event: %w", err)
		}
		if err := t.end.Synchronize(); err != nil {
			return 0, fmt.Errorf("bench: waiting for timed work: %w", err)
		}
		el, err := gpu.Elapsed(t.start, t.end)
		if err != nil {
			return 0, fmt.Errorf("bench: reading elapsed time: %w", err)
		}
		return el.Seconds(), nil
	}
}

// Close destroys the timer's events.
func (t *GPUTimer) Close() error {
	err := t.start.Close()
	if e := t.end.Close(); err == nil {
		err = e
	}
	return err
}
