package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

func TestPlaceCPUSaysWhy(t *testing.T) {
	p, err := Place("demo", "cpu", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Backend != gpu.BackendCPU || p.Device != nil || p.Owned {
		t.Fatalf("cpu option placed %+v", p)
	}
	if !strings.HasPrefix(p.Reason, "demo: cpu engine") {
		t.Fatalf("reason %q does not name the engine and backend", p.Reason)
	}
}

func TestPlaceRejectsABadOptionByName(t *testing.T) {
	_, err := Place("demo", "tpu", nil)
	if err == nil || !strings.Contains(err.Error(), `"tpu"`) || !strings.Contains(err.Error(), "demo") {
		t.Fatalf("bad option error %v: want the engine and the option named", err)
	}
}

func TestPlaceEmptyMeansEnvironmentThenAuto(t *testing.T) {
	t.Setenv(gpu.EnvDevice, "cpu")
	p, err := Place("demo", "", nil)
	if err != nil || p.Backend != gpu.BackendCPU || !strings.Contains(p.Reason, "requested") {
		t.Fatalf("WARPKV_DEVICE=cpu and no option: %+v, %v", p, err)
	}
	t.Setenv(gpu.EnvDevice, "")
	p, err = Place("demo", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := gpu.Available(); !ok && p.Backend != gpu.BackendCPU {
		t.Fatalf("no GPU, no option: placed on %v", p.Backend)
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestHostClockPhases(t *testing.T) {
	var c Clock
	c.Start()
	c.Mark(nil, MarkStart)
	c.Mark(nil, MarkUploaded)
	time.Sleep(2 * time.Millisecond)
	c.Mark(nil, MarkSorted)
	time.Sleep(3 * time.Millisecond)
	c.Mark(nil, MarkWorked)
	c.Mark(nil, MarkDone)
	tm := c.Timings("insert", 10)
	if tm.Sort < 2*time.Millisecond || tm.Work < 3*time.Millisecond || tm.Total < tm.Sort+tm.Work {
		t.Fatalf("phases %v", tm)
	}
	if tm.Upload > time.Millisecond || tm.Download > time.Millisecond {
		t.Fatalf("unmeasured phases not near zero: %v", tm)
	}
	if !strings.HasPrefix(tm.String(), "insert 10 items: total ") || tm.Rate() <= 0 {
		t.Fatalf("String %q, Rate %v", tm.String(), tm.Rate())
	}
}

func TestLastKeepsTheLatest(t *testing.T) {
	var l Last
	l.Set(Timings{Op: "a"})
	l.Set(Timings{Op: "b"})
	if l.Get().Op != "b" {
		t.Fatal(l.Get())
	}
}
