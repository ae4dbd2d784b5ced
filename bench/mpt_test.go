package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/workload"
)

func TestMPTSizes(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want []int
	}{
		{0, []int{10_000, 100_000, 1_000_000}},
		{5000, []int{5000}},
		{10_000, []int{10_000}},
		{250_000, []int{10_000, 100_000, 250_000}},
	} {
		if got := MPTSizes(tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("MPTSizes(%d) = %v, want %v", tc.max, got, tc.want)
		}
	}
	cases, notes := MPTCases(0)
	if len(cases) != 8 || len(notes) != 1 || !strings.Contains(notes[0], "wiki at 1M") {
		t.Errorf("MPTCases(0): %d cases, notes %q", len(cases), notes)
	}
	if op := (MPTCase{workload.YCSB, 100_000}).Op("update"); op != "ycsb 100k update" {
		t.Errorf("Op: %q", op)
	}
}

// TestRunMPT runs the suite at a tiny size on the CPU engines and, where
// a GPU is usable (or required), with the GPU engine's rows too.
func TestRunMPT(t *testing.T) {
	device, engines := "cpu", []string{"cpu sequential", "cpu parallel"}
	if ok, _ := gpu.Available(); ok || gputest.Required() {
		device, engines = "gpu", append(engines, "gpu")
	} else if _, err := RunMPT(Options{Device: "gpu"}); err == nil {
		t.Error("RunMPT on a GPU without one: no error")
	}
	const size = 1500
	rep, err := RunMPT(Options{Device: device, Size: size, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range workload.Datasets() {
		for _, eng := range engines {
			whats := []string{"update", "hash", "end to end", "lookup", "proof", "lookup into"}
			if eng == "gpu" {
				whats = append(whats, "end to end, host values", "lookup, host values", "lookup into, host values")
			}
			for _, what := range whats {
				want = append(want, fmt.Sprintf("%s 1.5k %s/%s", d, what, eng))
			}
		}
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Op+"/"+r.Engine)
		if r.Items != size || r.Seconds <= 0 || r.OpsPerSec <= 0 {
			t.Errorf("%s on %s: %d items in %gs", r.Op, r.Engine, r.Items, r.Seconds)
		}
		wantRatio := map[string]string{"cpu parallel": "sequential", "gpu": "parallel"}[r.Engine]
		if r.RatioTo != wantRatio {
			t.Errorf("%s on %s: ratio to %q, want %q", r.Op, r.Engine, r.RatioTo, wantRatio)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%q\nwant\n%q", got, want)
	}
}

// TestMPTBuildTimesFrees: free runs before every build after the first,
// never after the last one (whose trie stays the caller's), and its error
// ends the measurement.
func TestMPTBuildTimesFrees(t *testing.T) {
	var log []string
	build := func() (func(), error) {
		log = append(log, "build")
		return func() { log = append(log, "hash") }, nil
	}
	free := func() error { log = append(log, "free"); return nil }
	if _, _, _, err := MPTBuildTimes(1, 2, build, free); err != nil {
		t.Fatal(err)
	}
	want := "build hash free build hash free build hash"
	if got := strings.Join(log, " "); got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	boom := errors.New("boom")
	log = nil
	_, _, _, err := MPTBuildTimes(1, 2, build, func() error { return boom })
	if !errors.Is(err, boom) || strings.Join(log, " ") != "build hash" {
		t.Fatalf("a failing free: %v after %q", err, log)
	}
}
