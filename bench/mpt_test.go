package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"warpkv/mpt"
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
	if op := (MPTCase{mpt.DatasetYCSB, 100_000}).Op("update"); op != "ycsb 100k update" {
		t.Errorf("Op: %q", op)
	}
}

func TestRunMPT(t *testing.T) {
	if _, err := RunMPT(Options{Device: "gpu"}); err == nil {
		t.Error("RunMPT on a GPU: no error")
	}
	const size = 1500
	rep, err := RunMPT(Options{Device: "cpu", Size: size, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range mpt.Datasets() {
		for _, eng := range []string{"cpu sequential", "cpu parallel"} {
			for _, what := range []string{"update", "hash", "end to end", "lookup", "proof"} {
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
		if (r.Engine == "cpu parallel") != (r.RatioTo == "sequential") {
			t.Errorf("%s on %s: ratio to %q", r.Op, r.Engine, r.RatioTo)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%q\nwant\n%q", got, want)
	}
	if !slices.ContainsFunc(rep.Notes, func(s string) bool { return strings.Contains(s, "GPU MPT engine") }) {
		t.Errorf("no note on the missing GPU engine: %q", rep.Notes)
	}
}
