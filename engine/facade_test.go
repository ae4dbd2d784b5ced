package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// fake is an engine for the facade's tests: it counts its frees.
type fake struct{ freed *int }

func TestFacadeLifecycle(t *testing.T) {
	var f Facade[fake]
	if _, err := Lock(&f, "get"); !errors.Is(err, ErrClosed) {
		t.Fatalf("a facade never opened: %v", err)
	}
	freed := 0
	err := Open(&f, Spec[fake]{
		Name: "demo", Device: "cpu",
		Start: func(p Placement) (fake, error) { return fake{&freed}, nil },
		Free:  func(e fake) error { *e.freed++; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.Backend() != gpu.BackendCPU || !strings.HasPrefix(f.Reason(), "demo: cpu engine") {
		t.Fatalf("placed on %v: %q", f.Backend(), f.Reason())
	}
	e, err := RLock(&f, "get")
	if err != nil || e.freed != &freed {
		t.Fatalf("RLock: %v", err)
	}
	RUnlock(&f)
	Record(&f, Timings{Op: "get", Items: 1})
	if f.LastBatch().Op != "get" {
		t.Fatalf("LastBatch %+v", f.LastBatch())
	}
	if _, err := Lock(&f, "put"); err != nil {
		t.Fatal(err)
	}
	other := 0
	Replace(&f, fake{&other})
	Unlock(&f)
	if err := f.Close(); err != nil || other != 1 || freed != 0 {
		t.Fatalf("Close: %v; the replacement freed %d times, the first %d", err, other, freed)
	}
	if err := f.Close(); err != nil || other != 1 {
		t.Fatalf("second Close: %v, freed %d times", err, other)
	}
	_, err = Lock(&f, "put")
	if !errors.Is(err, ErrClosed) || err.Error() != "demo: put: engine closed" {
		t.Fatalf("after Close: %v", err)
	}
	if f.LastBatch() != (Timings{}) {
		t.Fatalf("LastBatch after Close: %+v", f.LastBatch())
	}
}

func TestFacadeStartFailureReleases(t *testing.T) {
	var f Facade[fake]
	boom := errors.New("boom")
	err := Open(&f, Spec[fake]{Name: "demo", Device: "cpu", Start: func(Placement) (fake, error) { return fake{}, boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("Open: %v", err)
	}
	if _, err := Lock(&f, "get"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after a failed Open: %v", err)
	}
}

func TestPlaceAllCPU(t *testing.T) {
	s, err := PlaceAll("cpu")
	if err != nil || len(s.GPUs) != 0 || s.Reason != "cpu engine: requested" {
		t.Fatalf("PlaceAll(cpu) = %+v, %v", s, err)
	}
	if _, err := PlaceAll("tpu"); err == nil {
		t.Fatal("PlaceAll(tpu) succeeded")
	}
	if ok, _ := gpu.Available(); !ok {
		if _, err := PlaceAll("gpu"); err == nil {
			t.Fatal("PlaceAll(gpu) without a GPU succeeded")
		}
		if s, err := PlaceAll("auto"); err != nil || len(s.GPUs) != 0 || !strings.Contains(s.Reason, "no usable GPU") {
			t.Fatalf("PlaceAll(auto) without a GPU = %+v, %v", s, err)
		}
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
}
