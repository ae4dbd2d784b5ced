package art

import (
	"strings"
	"testing"

	"github.com/warpkv/warpkv/engine"
)

// TestGPUInsertTrace traces inserts of new and present keys into a built
// tree with inner nodes below the root table (so that the insert has a
// node round): the steps of the insert path are marked in order, the
// device times run forward, the readbacks are as many as the steps that
// need one, and the traced engine's layout equals the CPU engine's.
func TestGPUInsertTrace(t *testing.T) {
	gt, ct, g := gpuAndCPU(t)
	g.trace = &engine.StepTrace{}
	g.bu.partsMin = 2 // the keys in two parts, as large batches go
	// 300000 keys take a root table of 65536 slots (width 2): about 4.6
	// keys a slot, so most new keys go into inner nodes.
	tk, tv := stepsKeys(0, 300000)
	ik, iv := stepsKeys(280000, 100000) // 20000 present, 80000 new
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
	want := []string{"start", "sort part 0", "upload", "sort part 1", "sort round 0", "classify", "group", "groups", "items",
		"build round 0: plan", "build round 0: reserve", "values waited", "build round 0: write", "entries", "node round: group",
		"node round: plan", "node round: emit", "node round: reserve", "node round: moves", "node round: write", "node round: moved in place, root writes",
		"node round: frees", "root writes", "values", "done"}
	at := 0
	for _, n := range names {
		if at < len(want) && n == want[at] {
			at++
		}
	}
	if at < len(want) {
		t.Errorf("steps %s: want %q in this order (missing %q)", strings.Join(names, ", "), want, want[at])
	}
	// One readback per sort round and build round, one each after
	// classify, group, groups, entries, the node round's group and its
	// plan with emit, and the end (the node round's frees are read with
	// the end).
	rounds := 0
	for _, n := range names {
		if strings.HasPrefix(n, "sort round ") || strings.HasSuffix(n, ": plan") && strings.HasPrefix(n, "build round ") {
			rounds++
		}
	}
	if syncs != rounds+7 {
		t.Errorf("%d host synchronizations counted, want %d (%d sort and build rounds, 7 more)", syncs, rounds+7, rounds)
	}
	if gt.Len() != 380000 || gt.Width() != 2 {
		t.Errorf("%d keys, width %d: want 380000, width 2", gt.Len(), gt.Width())
	}
	a, _ := gt.eng.snapshot()
	b, _ := ct.eng.snapshot()
	if err := equalStores(b, a); err != nil {
		t.Fatalf("layouts differ (cpu, gpu): %v", err)
	}
}
