package art

import (
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUInsertTrace traces inserts of new and present keys into a built
// tree: the steps of the insert path are marked in order, the device
// times run forward, every readback is counted, and the traced engine's
// layout equals the CPU engine's.
func TestGPUInsertTrace(t *testing.T) {
	dev := gputest.Device(t)
	gt, err := Open(Options{GPU: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer gt.Close()
	ct, _ := Open(Options{Device: "cpu"})
	g := gt.eng.(*gpuEngine)
	g.trace = &stepTrace{}
	tk, tv := stepsKeys(0, 50000)
	ik, iv := stepsKeys(40000, 30000) // 10000 present, 20000 new
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.BuildKeys(tk, tv); err != nil {
			t.Fatal(err)
		}
		if err := tr.InsertKeys(ik, iv); err != nil {
			t.Fatal(err)
		}
	}
	steps, err := g.trace.steps()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	syncs := 0
	for i, s := range steps {
		names = append(names, s.Name)
		syncs += s.Syncs
		if s.Device < 0 || (i > 0 && s.DeviceFrom < steps[i-1].DeviceFrom) {
			t.Errorf("step %d (%s): device %v at %v", i, s.Name, s.Device, s.DeviceFrom)
		}
	}
	t.Logf("\n%s", formatSteps(steps))
	want := []string{"start", "upload", "sort round 0", "classify", "group", "groups", "items", "build round 0: plan",
		"entries", "node round: group", "node round: plan", "root writes", "values", "done"}
	at := 0
	for _, n := range names {
		if at < len(want) && n == want[at] {
			at++
		}
	}
	if at < len(want) {
		t.Errorf("steps %s: want %q in this order (missing %q)", strings.Join(names, ", "), want, want[at])
	}
	if syncs < 2 {
		t.Errorf("%d host synchronizations counted, want at least one readback and the end", syncs)
	}
	if gt.Len() != 70000 {
		t.Errorf("%d keys, want 70000", gt.Len())
	}
	a, _ := gt.eng.snapshot()
	b, _ := ct.eng.snapshot()
	if err := equalStores(b, a); err != nil {
		t.Fatalf("layouts differ (cpu, gpu): %v", err)
	}
}

// TestFormatSteps renders a trace's steps with their totals (no GPU).
func TestFormatSteps(t *testing.T) {
	steps := []traceStep{
		{Name: "start", Host: 2 * time.Millisecond},
		{Name: "upload", Device: 1500 * time.Microsecond, DeviceFrom: 1500 * time.Microsecond, Host: time.Millisecond},
		{Name: "sort round 0", Device: 2 * time.Millisecond, DeviceFrom: 3500 * time.Microsecond, Host: 3 * time.Millisecond, Syncs: 1},
	}
	out := formatSteps(steps)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want a header, 3 steps and the total:\n%s", len(lines), out)
	}
	if f := strings.Fields(lines[3]); strings.Join(f, " ") != "sort round 0 2.000 3.500 3.000 1" {
		t.Errorf("step line %q", lines[3])
	}
	if f := strings.Fields(lines[4]); strings.Join(f, " ") != "total 3.500 6.000 1" {
		t.Errorf("total line %q", lines[4])
	}
}
