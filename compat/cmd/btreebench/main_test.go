package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/bench"
)

// TestRun runs every case at a tiny size: every implementation must answer
// every case like the first one (run fails otherwise), and every row but
// the reference's and the phase rows must carry its ratio to tidwall on
// one goroutine.
func TestRun(t *testing.T) {
	const size = 2000
	rep, err := run(config{size: size, reps: 1, device: "cpu", singleMax: size, peers: "tidwall,google"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := bench.BTreeCases(size)
	engines := []string{"tidwall, 1 goroutine", "tidwall, ", "google, 1 goroutine", "google, ", "cpu"}
	rows := 0
	for _, r := range rep.Results {
		if strings.Contains(r.Op, ": ") {
			if r.Engine != "cpu" || r.RatioTo != "whole call" {
				t.Errorf("phase row %q on %s: ratio to %q", r.Op, r.Engine, r.RatioTo)
			}
			continue
		}
		c := cases[rows/len(engines)]
		e := engines[rows%len(engines)]
		if r.Op != c.Name() || !strings.HasPrefix(r.Engine, e) || r.Seconds <= 0 {
			t.Errorf("row %d: %s on %s in %gs, want %s on %s...", rows, r.Op, r.Engine, r.Seconds, c.Name(), e)
		}
		if want := "tidwall, 1 goroutine"; r.Engine != want && r.RatioTo != want {
			t.Errorf("%s on %s: ratio to %q", r.Op, r.Engine, r.RatioTo)
		}
		rows++
	}
	if rows != len(cases)*len(engines) {
		t.Errorf("%d case rows, want %d", rows, len(cases)*len(engines))
	}

	// Single-goroutine peers skip the cases over --single-max, with a note.
	rep, err = run(config{size: size, reps: 1, device: "cpu", singleMax: size / 2, peers: "tidwall"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Notes, func(s string) bool { return strings.Contains(s, "--single-max") }) {
		t.Errorf("no note on skipped cases: %q", rep.Notes)
	}
	for _, r := range rep.Results {
		if r.Engine == "tidwall, 1 goroutine" && strings.Contains(r.Op, "2k") {
			t.Errorf("%s ran on one goroutine over --single-max", r.Op)
		}
	}
	// --single-ops lets them run named operations at any size.
	rep, err = run(config{size: size, reps: 1, device: "cpu", singleMax: size / 2, singleOps: "lookup", peers: "tidwall"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Results, func(r bench.Result) bool {
		return r.Engine == "tidwall, 1 goroutine" && strings.HasPrefix(r.Op, "lookup") && strings.Contains(r.Op, "2k")
	}) {
		t.Error("--single-ops lookup: no single-goroutine lookup row on the largest tree")
	}
	if _, err := run(config{size: size, reps: 1, device: "cpu", singleOps: "nope", peers: "tidwall"}, nil); err == nil {
		t.Error("unknown --single-ops operation: no error")
	}
	if _, err := run(config{size: size, reps: 1, device: "cpu", peers: "nope"}, nil); err == nil {
		t.Error("unknown peer: no error")
	}
}
