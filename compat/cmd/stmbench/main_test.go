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
	rep, err := run(config{size: 200, reps: 1, d: 30 * time.Millisecond, gpuD: 100 * time.Millisecond, device: "cpu", latency: true,
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
	checkLatencyNotes(t, rep.Notes, engines, len(rep.Results)/len(engines))
	if _, err := run(config{size: 200, reps: 1, d: time.Millisecond, gpuD: time.Millisecond, device: "cpu", peers: "nope"}, nil); err == nil {
		t.Error("unknown peer accepted")
	}
}

// TestRunGoroutineCounts: --goroutines runs every selected case ('|'
// separates case substrings) at each count, rows named with the count,
// ratios against anacrolix/stm at the same count, a note of the
// allocations per commit of every implementation, and (without
// --latency) the CSMV engine's latency not timed.
func TestRunGoroutineCounts(t *testing.T) {
	counts, err := parseCounts("1, 2,3")
	if err != nil || len(counts) != 3 || counts[2] != 3 {
		t.Fatalf("parseCounts: %v %v", counts, err)
	}
	for _, bad := range []string{"0", "1,x", "-2"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
	rep, err := run(config{size: 200, reps: 1, d: 20 * time.Millisecond, gpuD: 100 * time.Millisecond, device: "cpu",
		peers: "anacrolix,item-locks", only: "200, 0% ro of 100, 1 round|200, 90% ro of 100, 1 round", goroutines: []int{1, 3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, r := range rep.Results {
		if r.Engine == "csmv cpu" {
			ops = append(ops, r.Op)
			if r.RatioTo != "anacrolix/stm" || r.Items == 0 {
				t.Errorf("%s: %d commits, ratio to %q", r.Op, r.Items, r.RatioTo)
			}
		}
	}
	want := []string{"bank 200, 0% ro of 100, 1 round, 1 goroutines", "bank 200, 0% ro of 100, 1 round, 3 goroutines",
		"bank 200, 90% ro of 100, 1 round, 1 goroutines", "bank 200, 90% ro of 100, 1 round, 3 goroutines"}
	if strings.Join(ops, "; ") != strings.Join(want, "; ") {
		t.Fatalf("csmv rows %q, want %q", ops, want)
	}
	notes := 0
	for _, n := range rep.Notes {
		if strings.Contains(n, "heap allocations per commit: anacrolix/stm ") && strings.Contains(n, "csmv cpu ") {
			notes++
		}
	}
	if notes != len(want) {
		t.Errorf("%d allocation notes, want %d:\n%s", notes, len(want), strings.Join(rep.Notes, "\n"))
	}
	untimed := 0 // --latency=false: the CSMV engine's commits are not timed, the peers' are
	for _, n := range rep.Notes {
		if strings.Contains(n, latencyHeading) && strings.HasSuffix(n, ", csmv cpu not timed") && !strings.Contains(n, "anacrolix/stm not timed") {
			untimed++
		}
	}
	if untimed != len(want) {
		t.Errorf("%d latency notes with the CSMV engine not timed, want %d:\n%s", untimed, len(want), strings.Join(rep.Notes, "\n"))
	}
}

// TestMatrix: --banks runs issue 23's matrix (sizes x Zipf x rounds x
// read-only shares, sums of 100) on every implementation, hot-account rows
// named with their exponent; bad lists are refused.
func TestMatrix(t *testing.T) {
	cases, err := matrixCases("300", "0,0.99", "1,2", "0,0.9")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.Name())
	}
	want := []string{"bank 300, 0% ro of 100, 1 round", "bank 300, 90% ro of 100, 1 round", "bank 300, 0% ro of 100, 2 rounds", "bank 300, 90% ro of 100, 2 rounds",
		"bank 300, 0% ro of 100, 1 round, zipf 0.99", "bank 300, 90% ro of 100, 1 round, zipf 0.99", "bank 300, 0% ro of 100, 2 rounds, zipf 0.99", "bank 300, 90% ro of 100, 2 rounds, zipf 0.99"}
	if strings.Join(names, "; ") != strings.Join(want, "; ") {
		t.Fatalf("cases %q, want %q", names, want)
	}
	rep, err := run(config{reps: 1, d: 20 * time.Millisecond, gpuD: 100 * time.Millisecond, device: "cpu",
		peers: "anacrolix,item-locks,global-lock", only: "zipf", cases: cases}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 4*4 {
		t.Fatalf("%d rows, want 16", len(rep.Results))
	}
	for _, r := range rep.Results {
		if !strings.HasSuffix(r.Op, "zipf 0.99") || r.Items == 0 {
			t.Errorf("row %s on %s: %d commits", r.Op, r.Engine, r.Items)
		}
	}
	for _, bad := range [][4]string{{"50", "0", "1", "0"}, {"300", "1", "1", "0"}, {"300", "0", "0", "0"}, {"300", "0", "1", "1.5"}, {"x", "0", "1", "0"}} {
		if _, err := matrixCases(bad[0], bad[1], bad[2], bad[3]); err == nil {
			t.Errorf("matrixCases%q accepted", bad)
		}
	}
}

// checkLatencyNotes checks that each of cases cases has a latency note
// with a timed p50/p99/p99.9 of every engine, in that order and ordered
// p50 <= p99 <= p99.9.
func checkLatencyNotes(t *testing.T, notes, engines []string, cases int) {
	t.Helper()
	found := 0
	for _, n := range notes {
		_, list, ok := strings.Cut(n, latencyHeading)
		if !ok {
			continue
		}
		found++
		items := strings.Split(strings.TrimSpace(list), ", ")
		if len(items) != len(engines) {
			t.Errorf("latency note %q: %d figures, want %d", n, len(items), len(engines))
			continue
		}
		for i, it := range items {
			fig, named := strings.CutPrefix(it, engines[i]+" ")
			var ds []time.Duration
			for _, f := range strings.Split(fig, "/") {
				d, err := time.ParseDuration(f)
				if err != nil || d <= 0 {
					break
				}
				ds = append(ds, d)
			}
			if !named || len(ds) != 3 || ds[0] > ds[1] || ds[1] > ds[2] {
				t.Errorf("latency note %q: figure %q, want %s p50/p99/p99.9, ordered", n, it, engines[i])
			}
		}
	}
	if found != cases {
		t.Errorf("%d latency notes, want %d", found, cases)
	}
}

// TestRunVersions: --versions sets every case's versions per item, and
// the rows' names say it.
func TestRunVersions(t *testing.T) {
	rep, err := run(config{size: 200, reps: 1, d: 20 * time.Millisecond, gpuD: 20 * time.Millisecond, device: "cpu", peers: "",
		versions: 3, only: "0% ro of 100, 1 round"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range rep.Results {
		if !strings.HasSuffix(r.Op, ", 3 versions") || r.Items == 0 {
			t.Errorf("row %q on %s, %d commits; want its name to end in \", 3 versions\"", r.Op, r.Engine, r.Items)
		}
	}
}
