package bench

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// suiteCase is a case of a suite that compares implementations (btree,
// art): K is its answer, which every implementation must give alike.
type suiteCase[K comparable] interface {
	Name() string     // the case's operation column
	Validate(K) error // whether an answer is right for the case
	opName() string   // the operation, for notes
}

// named is an implementation of a suite: its engine column.
type named interface{ Name() string }

// runCases measures every implementation on every case, adding the rows to
// rep: prepare(c) makes case c's inputs before its first implementation
// runs, and run(c, im) measures c on im, returning its rows (the case's row
// first) and its answer. The first implementation that answers a case is
// the reference: every other's answer must equal its answer, and every
// other's case row that has no ratio of its own carries its ratio to the
// reference's (named by the reference's Name). skip, if not nil, returns
// why an implementation does not run a case ("" to run it); a skip and an
// operation an implementation does not implement (unsupported) become
// notes, one per reason. An implementation that fails a case (an error, an
// answer that Validate rejects or that differs from the reference's) gets
// no row but a note, and the run goes on; the failures are returned
// together at the end. An error of prepare stops the run. Progress lines
// name each case and implementation as it starts and each row's figure as
// it is measured, so that a run cut short still shows its figures.
func runCases[C suiteCase[K], I named, K comparable](rep *Report, p *Progress, cases []C, impls []I,
	skip func(C, I) string, prepare func(C) error, run func(C, I) ([]Result, K, error)) error {
	noted := map[string]bool{}
	note := func(s string) {
		if !noted[s] {
			noted[s] = true
			rep.Notes = append(rep.Notes, s)
		}
	}
	var failed []error
	for _, c := range cases {
		if err := prepare(c); err != nil {
			return err
		}
		var (
			ref      Result
			refCheck K
			haveRef  bool
		)
		for _, im := range impls {
			if skip != nil {
				if why := skip(c, im); why != "" {
					note(why)
					continue
				}
			}
			p.Printf("%s: %s", im.Name(), c.Name())
			rows, ch, err := run(c, im)
			if unsupported(err) {
				note(fmt.Sprintf("%s: no %s rows: %v", im.Name(), c.opName(), err))
				continue
			}
			if err == nil {
				err = c.Validate(ch)
			}
			if err == nil && haveRef && ch != refCheck {
				err = fmt.Errorf("answered %v, %s %v", ch, ref.Engine, refCheck)
			}
			if err != nil {
				err = fmt.Errorf("%s on %s: %w", c.Name(), im.Name(), err)
				p.Printf("FAILED: %v", err)
				note(fmt.Sprintf("FAILED, no row: %v", err))
				failed = append(failed, err)
				continue
			}
			if !haveRef {
				ref, refCheck, haveRef = rows[0], ch, true
			} else if rows[0].RatioTo == "" {
				rows[0] = rows[0].VsPeer(ref.Engine, ref)
			}
			rep.add(rows...)
			for _, r := range rows {
				if r.RatioTo != "" {
					p.Printf("  %s: %s ops/s, %s", r.Op, SI(r.OpsPerSec), formatRatio(r.Ratio, r.RatioTo))
				} else {
					p.Printf("  %s: %s ops/s", r.Op, SI(r.OpsPerSec))
				}
			}
		}
	}
	return errors.Join(failed...)
}

// unsupported reports whether err says that an implementation does not
// implement an operation: errors.ErrUnsupported, or a "not implemented"
// message (as btree's former ErrNotOnGPU said before GPU insert and delete
// existed).
func unsupported(err error) bool {
	return err != nil && (errors.Is(err, errors.ErrUnsupported) || strings.Contains(err.Error(), "not implemented"))
}

// scaleSize returns n scaled by maxTree/paper, rounded, at least 1: a
// case size as written for the paper's largest tree, at the largest tree
// of a run.
func scaleSize(n, maxTree, paper int) int {
	return max(1, int((int64(n)*int64(maxTree)+int64(paper)/2)/int64(paper)))
}

// defaultSize is a suite's largest tree when Options.Size is 0: gpuSize
// when a GPU engine runs, else cpuSize.
func defaultSize(gpu bool, gpuSize, cpuSize int) int {
	if gpu {
		return gpuSize
	}
	return cpuSize
}

// engineSet is a suite's warpkv engines, opened for a device option: the
// implementations, one sentence each, and the device they run on (owned:
// closed after them).
type engineSet[I interface{ Close() error }] struct {
	Impls   []I      // "cpu", then "gpu" when a GPU is used
	Engines []string // one sentence per engine: which and why
	GPU     bool     // whether a GPU engine is among Impls
	dev     *gpu.Device
}

// Close closes the engines, then the device.
func (e *engineSet[I]) Close() error {
	var errs []error
	for _, im := range e.Impls {
		errs = append(errs, im.Close())
	}
	e.Impls = nil
	if e.dev != nil {
		errs = append(errs, e.dev.Close())
		e.dev = nil
	}
	return errors.Join(errs...)
}

// timeRuns runs run DefaultWarmup + reps times, prepare (if not nil)
// before each run outside the timed region, and returns the wall-clock
// seconds of the reps timed runs; after (if not nil) is called after each
// timed run (to read the phases the implementation reports). The first
// error stops it.
func timeRuns(reps int, prepare, run func() error, after func()) ([]float64, error) {
	var wall []float64
	for i := range DefaultWarmup + reps {
		if prepare != nil {
			if err := prepare(); err != nil {
				return nil, err
			}
		}
		t0 := time.Now()
		if err := run(); err != nil {
			return nil, err
		}
		el := time.Since(t0).Seconds()
		if i < DefaultWarmup {
			continue
		}
		wall = append(wall, el)
		if after != nil {
			after()
		}
	}
	return wall, nil
}
