package gpu

import (
	"testing"
	"time"

	"github.com/ebitengine/purego"
)

// TestCloseWaitsForGrowthsInFlight runs Close's side of the growth gate
// (closed set, then waitGrowths under d.mu) against two growths counted
// by beginGrowth, without a driver: the wait must last until the last
// growth ends, a growth begun meanwhile must be refused, and a freed
// Growable must be refused too.
func TestCloseWaitsForGrowthsInFlight(t *testing.T) {
	d := &Device{}
	g := &Growable{d: d, base: 1 << 20}
	for range 2 {
		if err := d.beginGrowth(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.beginGrowth(&Growable{d: d}); err == nil {
		t.Fatal("a growth of a freed Growable began")
	}
	d.endGrowth() // one of the two ends before Close, and a third begins
	if err := d.beginGrowth(g); err != nil {
		t.Fatal(err)
	}
	closing, done := make(chan struct{}), make(chan struct{})
	go func() {
		d.mu.Lock()
		d.closed = true
		close(closing)
		d.waitGrowths()
		d.mu.Unlock()
		close(done)
	}()
	<-closing
	if err := d.beginGrowth(g); err == nil {
		t.Fatal("a growth began while the device was closing")
	}
	waiting := func(what string) {
		select {
		case <-done:
			t.Fatalf("Close's wait ended %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
	waiting("with two growths in flight")
	d.endGrowth()
	waiting("with a growth in flight")
	d.endGrowth()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close's wait did not end after the last growth")
	}
}

// TestDriverSymbolLookup looks symbols up in the C library the way
// loadDriver does in the driver's: the first name found is stored, and a
// symbol none of whose names exists leaves the field 0.
func TestDriverSymbolLookup(t *testing.T) {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skipf("no libc.so.6 to look symbols up in: %v", err)
	}
	for _, tc := range []struct {
		name  string
		names []string
		found bool
	}{
		{"present", []string{"malloc"}, true},
		{"first missing, second present", []string{"warpkv_missing_symbol", "free"}, true},
		{"all missing", []string{"warpkv_missing_a", "warpkv_missing_b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d driverAPI
			s := driverSymbol{tc.names, func(d *driverAPI) *uintptr { return &d.cuInit }}
			if got := s.lookup(h, &d); got != tc.found || (d.cuInit != 0) != tc.found {
				t.Fatalf("lookup = %v, address %#x; want found %v", got, d.cuInit, tc.found)
			}
		})
	}
}

// TestVMMLoadedNeedsEveryOptionalSymbol checks that vmmAPI.loaded is true
// when every symbol of driverOptional was found, and false when any one
// of them is missing (so a VMM entry point loaded() checks but
// driverOptional lacks, or the reverse, fails here).
func TestVMMLoadedNeedsEveryOptionalSymbol(t *testing.T) {
	fill := func(skip int) *driverAPI {
		d := &driverAPI{}
		for i, s := range driverOptional {
			if i != skip {
				*s.field(d) = uintptr(0x1000 + i)
			}
		}
		return d
	}
	if d := fill(-1); !d.vmm.loaded() {
		t.Fatal("loaded() false with every optional symbol found")
	}
	for i, s := range driverOptional {
		if fill(i).vmm.loaded() {
			t.Errorf("loaded() true without %s", s.names[0])
		}
	}
}
