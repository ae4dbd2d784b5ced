package main

import (
	"strings"
	"testing"
)

// TestRunSmall runs every peer and the CPU engine on the suite's cases at
// a small size: every implementation answers every case it runs alike
// (RunARTCases compares the answers), and the rows carry their ratio to
// the reference.
func TestRunSmall(t *testing.T) {
	rep, err := run(config{size: 3000, reps: 1, peerReps: 1, device: "cpu", singleMax: 1 << 30, peers: "iradix,tidwall,map"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]bool{}
	for _, r := range rep.Results {
		engines[r.Engine] = true
		if r.Engine == "cpu" && r.RatioTo != "iradix, 1 goroutine" && !strings.HasPrefix(r.Op, "prefix") {
			t.Errorf("row %+v: want its ratio to iradix on one goroutine", r)
		}
	}
	for _, e := range []string{"iradix, 1 goroutine", "tidwall, 1 goroutine", "map, 1 goroutine", "cpu"} {
		if !engines[e] {
			t.Errorf("no rows of %s", e)
		}
	}
	if len(rep.Summary) == 0 || !strings.Contains(rep.SummaryTitle, "targets") {
		t.Errorf("no summary: %q %v", rep.SummaryTitle, rep.Summary)
	}
	for _, r := range rep.Summary {
		if !strings.HasPrefix(r.Op, "cpu engine vs iradix, 1 goroutine") || r.Ratio <= 0 {
			t.Errorf("summary row %+v: want the CPU engine's lookups against iradix per core", r)
		}
	}
	if _, err := run(config{size: 3000, reps: 1, peerReps: 1, device: "cpu", engines: "gpu", peers: ""}, nil); err == nil {
		t.Fatal("--engines gpu without a GPU accepted")
	}
	if _, err := run(config{size: 3000, reps: 1, peerReps: 1, device: "cpu", peers: "plar"}, nil); err == nil {
		t.Fatal("unknown peer accepted")
	}
}
