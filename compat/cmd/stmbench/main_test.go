package main

import (
	"strings"
	"testing"
	"time"
)

// TestRunSmall runs a few bank cases on every implementation at a tiny
// size: each gives a row (run fails on a wrong total), peers' and the
// engine's rows carry their ratio to anacrolix/stm.
func TestRunSmall(t *testing.T) {
	rep, err := run(config{size: 200, reps: 1, d: 30 * time.Millisecond, gpuD: 100 * time.Millisecond, device: "cpu",
		peers: "anacrolix,item-locks,global-lock", only: "ro of 100, 1 round"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	engines := []string{"anacrolix/stm", "item-locks", "global-lock", "csmv cpu"}
	if len(rep.Results) == 0 || len(rep.Results)%len(engines) != 0 {
		t.Fatalf("%d rows", len(rep.Results))
	}
	for i, r := range rep.Results {
		if want := engines[i%len(engines)]; r.Engine != want || r.Items == 0 {
			t.Errorf("row %d: %s on %s, %d commits; want engine %s", i, r.Op, r.Engine, r.Items, want)
		}
		if r.Engine != "anacrolix/stm" && r.RatioTo != "anacrolix/stm" {
			t.Errorf("%s on %s: ratio to %q", r.Op, r.Engine, r.RatioTo)
		}
		if !strings.HasPrefix(r.Op, "bank ") {
			t.Errorf("row %q", r.Op)
		}
	}
	if _, err := run(config{size: 200, reps: 1, d: time.Millisecond, gpuD: time.Millisecond, device: "cpu", peers: "nope"}, nil); err == nil {
		t.Error("unknown peer accepted")
	}
}
