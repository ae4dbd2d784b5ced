package bench

import (
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

func TestMeasureCPUCopy(t *testing.T) {
	res, err := MeasureCPUCopy(1<<20, 3, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("got %d results, want 3", len(res))
	}
	for _, r := range res {
		if r.Items != 1<<16 || r.Bytes != 2<<20 || r.Seconds <= 0 || r.GBps <= 0 {
			t.Errorf("implausible result %+v", r)
		}
	}
	if res[1].RatioTo != "1 thread" || !strings.Contains(res[1].Op, "3 threads") {
		t.Errorf("parallel result %+v", res[1])
	}
	if res[2].RatioTo != "3 threads" || !strings.Contains(res[2].Op, "3 threads, non-temporal stores in 128 KiB pieces") {
		t.Errorf("non-temporal result %+v", res[2])
	}
	if _, err := MeasureCPUCopy(8, 1, 0, 1); err == nil {
		t.Error("copy of 8 bytes accepted")
	}
}

func TestParallelCopy(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {7, 3}, {1000, 7}, {4096, 1}} {
		src := make([]byte, tc.n)
		for i := range src {
			src[i] = byte(i*31 + 1)
		}
		dst := make([]byte, tc.n)
		parallelCopy(dst, src, tc.workers)
		if string(dst) != string(src) {
			t.Errorf("n=%d workers=%d: copy differs", tc.n, tc.workers)
		}
	}
}

func TestRunLimitsCPU(t *testing.T) {
	rep, err := RunLimits(Options{Device: "cpu", Size: 1 << 20, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Suite != "limits" || len(rep.Results) != 6 || len(rep.Engines) != 1 {
		t.Errorf("report %+v", rep)
	}
	// The copies, then the hot word passed, locked and added to, each
	// with its time a step in a note.
	for i, want := range []string{"memory copy, 1 thread", "memory copy", "memory copy", "hot word passed between 2 threads", "hot word under a spin lock", "atomic add on one word"} {
		if i < len(rep.Results) && (!strings.HasPrefix(rep.Results[i].Op, want) || !(rep.Results[i].OpsPerSec > 0)) {
			t.Errorf("row %d: %q at %v/s, want %q...", i, rep.Results[i].Op, rep.Results[i].OpsPerSec, want)
		}
	}
	if n := len(rep.Notes); n != 3 {
		t.Errorf("%d notes, want 3 (ns a step): %q", n, rep.Notes)
	}
}

// TestMeasureHotWordsGPU times the hot-word kernels at small step counts
// on a GPU: three rows with plausible rates, each checked, and nothing
// left allocated.
func TestMeasureHotWordsGPU(t *testing.T) {
	d := gputest.Device(t)
	before, _ := d.Live()
	res, notes, err := measureGPUHotWords(d, nil, 2, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || len(notes) != 3 {
		t.Fatalf("%d results and %d notes, want 3 each", len(res), len(notes))
	}
	for _, r := range res {
		if !(r.OpsPerSec > 0) || r.Engine != "gpu" {
			t.Errorf("implausible result %+v", r)
		}
		t.Logf("%-80s %10.3g steps/s", r.Op, r.OpsPerSec)
	}
	for _, n := range notes {
		t.Log(n)
	}
	if n, _ := d.Live(); n != before {
		t.Errorf("%d allocations live after, %d before", n, before)
	}
}

// TestMeasureLimitsGPU runs the limits measurement at small sizes on a GPU
// and checks that the numbers are plausible.
func TestMeasureLimitsGPU(t *testing.T) {
	d := gputest.Device(t)
	before, _ := d.Live()
	cfg := limitsConfig{copyBytes: 64 << 20, tableBytes: 256 << 20, hostBytes: 16 << 20, gathers: 1 << 20, warmup: 1, reps: 2}
	lim, err := measureLimits(d, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{
		"CopyGBps": lim.CopyGBps, "MemcpyGBps": lim.MemcpyGBps, "Gather32": lim.Gather32, "Gather64": lim.Gather64,
		"Gather128": lim.Gather128, "H2DGBps": lim.H2DGBps, "D2HGBps": lim.D2HGBps,
	} {
		if !(v > 0) {
			t.Errorf("%s = %v", name, v)
		}
	}
	if len(lim.Results) != 7 {
		t.Errorf("%d results, want 7", len(lim.Results))
	}
	for _, r := range lim.Results {
		t.Logf("%-50s %10.3g items/s %8.1f GB/s", r.Op, r.OpsPerSec, r.GBps)
	}
	if n, _ := d.Live(); n != before {
		t.Errorf("%d allocations live after, %d before", n, before)
	}
}

func TestSuites(t *testing.T) {
	for _, name := range []string{"limits", "prim"} {
		if s, ok := Lookup(name); !ok || s.Run == nil || s.Summary == "" {
			t.Errorf("suite %s missing or incomplete", name)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("unknown suite found")
	}
}
