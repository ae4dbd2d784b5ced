package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

func TestInputs(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100, 1<<16 + 3} {
		if w := randomWords[uint64](n, 1); len(w) != n || (n > 2 && w[0] == w[1]) {
			t.Errorf("randomWords(%d): %d values", n, len(w))
		}
		flags, kept := randomFlags(n, 1)
		if c := len(flags) - strings.Count(string(flags), "\x00"); c != kept || len(flags) != n {
			t.Errorf("randomFlags(%d): %d set, reported %d", n, c, kept)
		}
		keys, runs := randomRuns[uint32](n, 1)
		got := 0
		for i := range keys {
			if i == 0 || keys[i] != keys[i-1] {
				got++
			}
		}
		if len(keys) != n || got != runs {
			t.Errorf("randomRuns(%d): %d runs, reported %d", n, got, runs)
		}
		if s := sortedWords[uint32](n, 1); len(s) != n || !slices.IsSorted(s) {
			t.Errorf("sortedWords[uint32](%d) not sorted", n)
		}
		if s := sortedWords[uint64](n, 1); len(s) != n || !slices.IsSorted(s) {
			t.Errorf("sortedWords[uint64](%d) not sorted", n)
		}
		off := randomSegments(n, 1)
		if off[0] != 0 || int(off[len(off)-1]) != n || !slices.IsSorted(off) {
			t.Errorf("randomSegments(%d) = ...%v", n, off[max(0, len(off)-3):])
		}
		data, moff := randomMessages(n, 1, 1, keccakMaxLen)
		if len(moff) != n+1 || int(moff[n]) != len(data) || !slices.IsSorted(moff) {
			t.Errorf("randomMessages(%d): %d offsets, %d bytes", n, len(moff), len(data))
		}
		for i := range n {
			if l := moff[i+1] - moff[i]; l < 1 || l > keccakMaxLen {
				t.Fatalf("message %d has %d bytes", i, l)
			}
		}
	}
	if typeName[uint32]() != "u32" || typeName[uint64]() != "u64" {
		t.Errorf("typeName: %s %s", typeName[uint32](), typeName[uint64]())
	}
}

// checkPrimReport checks that every case produced rows on every engine
// and that the rows are plausible.
func checkPrimReport(t *testing.T, rep *Report, engines ...string) {
	t.Helper()
	for _, pc := range primCases() {
		for _, eng := range engines {
			found := false
			for _, r := range rep.Results {
				if r.Op == pc.op && r.Engine == eng {
					found = true
					if r.Seconds <= 0 || r.Items <= 0 || r.Bytes <= 0 || r.RatioTo == "" {
						t.Errorf("%s on %s: implausible %+v", pc.op, eng, r)
					}
				}
			}
			if !found {
				t.Errorf("no %s row for %s", eng, pc.op)
			}
		}
	}
	for _, r := range rep.Results {
		t.Logf("%-45s %-12s %9s items %9s/s %8.2f GB/s %s", r.Op, r.Engine, SI(float64(r.Items)), SI(r.OpsPerSec), r.GBps,
			formatRatio(r.Ratio, r.RatioTo))
	}
}

func TestRunPrimCPU(t *testing.T) {
	for _, size := range []int{1, 33, 5000} {
		rep, err := RunPrim(Options{Device: "cpu", Size: size, Reps: 1})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		checkPrimReport(t, rep, "cpu")
		peers := 0
		for _, r := range rep.Results {
			if r.Engine == "go, 1 thread" {
				peers++
			}
		}
		if peers != 5 {
			t.Errorf("size %d: %d standard library peer rows, want 5 (one per sort)", size, peers)
		}
	}
}

// TestRunPrimGPU runs the suite at small sizes on both engines.
func TestRunPrimGPU(t *testing.T) {
	gputest.Device(t)
	size := 1<<16 + 3
	if testing.Short() {
		size = 1000
	}
	cfg := limitsConfig{copyBytes: 16 << 20, tableBytes: 64 << 20, hostBytes: 8 << 20, gathers: 1 << 18}
	rep, err := runPrim(Options{Device: "gpu", Size: size, Reps: 2}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkPrimReport(t, rep, "cpu", "gpu")
	hostRows := 0
	for _, r := range rep.Results {
		if strings.HasSuffix(r.Op, ", host incl. transfers") {
			hostRows++
		}
	}
	if hostRows != 5 {
		t.Errorf("%d end-to-end sort rows, want 5", hostRows)
	}
}
