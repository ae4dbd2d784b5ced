package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

func TestIndexSizes(t *testing.T) {
	for _, c := range []struct {
		size    int
		buckets int
		batches []int
	}{
		{0, 1 << 24, nil},
		{1, 1 << 10, []int{1}},
		{1000, 1 << 10, []int{1000}},
		{1 << 10, 1 << 10, []int{1 << 10}},
		{5000, 1 << 13, []int{1 << 10, 1 << 12, 5000}},
		{1 << 14, 1 << 14, []int{1 << 10, 1 << 12, 1 << 14}},
	} {
		if got := indexBuckets(c.size); got != c.buckets {
			t.Errorf("indexBuckets(%d) = %d, want %d", c.size, got, c.buckets)
		}
		if c.size == 0 {
			continue
		}
		if got := indexBatches(c.size); !slices.Equal(got, c.batches) {
			t.Errorf("indexBatches(%d) = %v, want %v", c.size, got, c.batches)
		}
	}
	if got := indexBatches(indexGPUBatch); len(got) != 8 || got[7] != 1<<24 {
		t.Errorf("default GPU batches %v", got)
	}
	for n, want := range map[int]string{1024: "2^10", 1 << 24: "2^24", 5000: "5000"} {
		if got := batchName(n); got != want {
			t.Errorf("batchName(%d) = %q, want %q", n, got, want)
		}
	}
}

// checkIndexReport checks that the report has every row kind of each
// engine at each batch size and that the rows are plausible.
func checkIndexReport(t *testing.T, rep *Report, size int, gpuRows bool) {
	t.Helper()
	want := map[string]int{"cpu": 3 * len(indexBatches(size))}
	if gpuRows {
		want["gpu"] = indexRowKinds * len(indexBatches(size))
	}
	got := map[string]int{}
	pinned := 0
	for _, r := range rep.Results {
		if !strings.Contains(r.Op, "batch ") {
			continue // references
		}
		got[r.Engine]++
		if strings.HasSuffix(r.Op, ", host incl. transfers, pinned inputs") {
			pinned++
			if r.Engine != "gpu" || r.RatioTo != "pinned transfer limit" {
				t.Errorf("pinned-inputs row not a gpu row against the pinned transfer limit: %+v", r)
			}
		}
		if r.Seconds <= 0 || r.Items <= 0 || r.OpsPerSec <= 0 {
			t.Errorf("implausible row %+v", r)
		}
		if r.Engine == "gpu" && (r.RatioTo == "" || r.Bytes <= 0) {
			t.Errorf("gpu row without a reference: %+v", r)
		}
		t.Logf("%-55s %-4s %9s items %9s/s %s", r.Op, r.Engine, SI(float64(r.Items)), SI(r.OpsPerSec), formatRatio(r.Ratio, r.RatioTo))
	}
	for e, n := range want {
		if got[e] != n {
			t.Errorf("%d %s rows, want %d", got[e], e, n)
		}
	}
	if wantPinned := 3 * len(indexBatches(size)); gpuRows && pinned != wantPinned {
		t.Errorf("%d pinned-inputs rows, want %d (search, insert, delete per batch)", pinned, wantPinned)
	}
	for _, n := range rep.Notes {
		t.Log("note:", n)
		if strings.Contains(n, "missed") {
			t.Errorf("deletes missed: %s", n)
		}
	}
	if size >= 1000 && !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "hit ratio 0.5") }) {
		t.Errorf("no note with a hit ratio of about 0.5: %q", rep.Notes)
	}
}

func TestRunIndexCPU(t *testing.T) {
	for _, size := range []int{1, 3000} {
		rep, err := RunIndex(Options{Device: "cpu", Size: size, Reps: 1})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if rep.Suite != "index" {
			t.Errorf("suite %q", rep.Suite)
		}
		checkIndexReport(t, rep, size, false)
	}
}

// TestRunIndexGPU runs the suite at a small size on both engines.
func TestRunIndexGPU(t *testing.T) {
	gputest.Device(t)
	size := 5000
	cfg := limitsConfig{copyBytes: 16 << 20, tableBytes: 64 << 20, hostBytes: 8 << 20, gathers: 1 << 18}
	rep, err := runIndex(Options{Device: "gpu", Size: size, Reps: 2}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkIndexReport(t, rep, size, true)
}
