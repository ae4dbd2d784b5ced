package bench

import (
	"errors"
	"fmt"
	"strings"
)

// EngineSuites are the suites that honour Options.Engines (the others run
// every engine the device option allows).
var EngineSuites = []string{"btree", "art"}

// keepEngines closes and drops the implementations of e that engines
// (see ParseARTEngines: "cpu", "gpu", "cpu,gpu", "" for every one) does
// not name, with a line in e.Engines for each, and fails when it names
// the GPU engine alone and e has none (reason: why there is no GPU).
// The art suite chooses before it opens (OpenARTEngines); this is the
// same choice for a suite that opens its engines first. Cost: a Close.
func keepEngines[I interface {
	Close() error
	Name() string
}](e *engineSet[I], engines, reason string) error {
	wantCPU, wantGPU, err := ParseARTEngines(engines)
	if err != nil {
		return err
	}
	if wantGPU && !wantCPU && !e.GPU {
		return fmt.Errorf("engines %q: no usable GPU: %s", engines, reason)
	}
	var kept []I
	var errs []error
	for _, im := range e.Impls {
		if want := map[string]bool{"cpu": wantCPU, "gpu": wantGPU}[im.Name()]; want {
			kept = append(kept, im)
			continue
		}
		errs = append(errs, im.Close())
		e.Engines = append(e.Engines, fmt.Sprintf("no %s engine rows: engines %s", im.Name(), engines))
		if im.Name() == "gpu" {
			e.GPU = false
		}
	}
	e.Impls = kept
	return errors.Join(errs...)
}

// noGPUReason returns the reason a suite's engine lines give for having
// no GPU rows ("no gpu rows: REASON"), or "" when they give none.
func noGPUReason(lines []string) string {
	for _, l := range lines {
		if r, ok := strings.CutPrefix(l, "no gpu rows: "); ok {
			return r
		}
	}
	return ""
}
