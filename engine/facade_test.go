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

// TestFacadeReopen: opening an open facade starts nothing, releases the
// placement it was given and leaves the open engine in place; after Close
// the facade opens again, with no timings of the engine before.
func TestFacadeReopen(t *testing.T) {
	var f Facade[fake]
	first, second := 0, 0
	spec := func(freed *int, started *bool) Spec[fake] {
		return Spec[fake]{
			Name: "demo", Device: "cpu",
			Start: func(Placement) (fake, error) { *started = true; return fake{freed}, nil },
			Free:  func(e fake) error { *e.freed++; return nil },
		}
	}
	var started bool
	if err := Open(&f, spec(&first, &started)); err != nil {
		t.Fatal(err)
	}
	Record(&f, Timings{Op: "get", Items: 1})
	started = false
	err := Open(&f, spec(&second, &started))
	if !errors.Is(err, ErrOpen) || err.Error() != "demo: open: engine already open" {
		t.Fatalf("second Open: %v", err)
	}
	if started {
		t.Fatal("second Open started an engine")
	}
	e, err := RLock(&f, "get")
	if err != nil || e.freed != &first {
		t.Fatalf("after the second Open the engine is %v, %v", e, err)
	}
	RUnlock(&f)
	if err := f.Close(); err != nil || first != 1 || second != 0 {
		t.Fatalf("Close: %v; freed %d and %d times", err, first, second)
	}
	if err := Open(&f, spec(&second, &started)); err != nil || !started {
		t.Fatalf("Open after Close: %v (started %v)", err, started)
	}
	if f.LastBatch() != (Timings{}) {
		t.Fatalf("LastBatch of the new engine: %+v", f.LastBatch())
	}
	if err := f.Close(); err != nil || second != 1 {
		t.Fatalf("Close: %v; freed %d times", err, second)
	}
}

// TestOpenFresh: OpenFresh returns the engine it opened and a fresh that
// builds more on the same placement, each a new engine.
func TestOpenFresh(t *testing.T) {
	var f Facade[fake]
	var places []Placement
	freed := 0
	e, fresh, err := OpenFresh(&f, Spec[fake]{Name: "demo", Device: "cpu", Free: func(e fake) error { *e.freed++; return nil }},
		func(p Placement) (fake, error) {
			places = append(places, p)
			return fake{&freed}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := RLock(&f, "get"); got != e {
		t.Fatalf("OpenFresh returned %v, the facade holds %v", e, got)
	}
	RUnlock(&f)
	if _, err := fresh(); err != nil {
		t.Fatal(err)
	}
	if len(places) != 2 || places[0] != places[1] || places[0].Backend != gpu.BackendCPU {
		t.Fatalf("placements %+v, want the same CPU placement twice", places)
	}
	if err := f.Close(); err != nil || freed != 1 {
		t.Fatalf("Close: %v, freed %d times", err, freed)
	}
	boom := errors.New("boom")
	if _, fresh, err := OpenFresh(&f, Spec[fake]{Name: "demo", Device: "cpu"}, func(Placement) (fake, error) { return fake{}, boom }); !errors.Is(err, boom) || fresh != nil {
		t.Fatalf("a failing start: %v, fresh %v", err, fresh != nil)
	}
}
