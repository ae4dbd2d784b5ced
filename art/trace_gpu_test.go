package art

import (
	"strings"
	"testing"

	"github.com/warpkv/warpkv/engine"
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
	g.trace = &engine.StepTrace{}
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
	steps, err := g.trace.Steps()
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
	t.Logf("\n%s", engine.FormatSteps(steps))
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
