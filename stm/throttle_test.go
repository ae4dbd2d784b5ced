package stm

import "testing"

// TestThrottleOption: Options.Throttle's values as the kernels take them,
// and the ones Open refuses.
func TestThrottleOption(t *testing.T) {
	def, direct := float64(DefaultThrottle), float64(DefaultThrottleDirect)
	for _, c := range []struct {
		in   float64
		want int
	}{{0, max(0, int(def*1000+0.5))}, {-1, 0}, {-0.5, 0}, {0.25, 250}, {0.9999, 1000}, {1e-9, 1}} {
		if got := throttleMille(c.in, false); got != c.want {
			t.Errorf("throttleMille(%g, servers) = %d, want %d", c.in, got, c.want)
		}
	}
	if got, want := throttleMille(0, true), int(direct*1000+0.5); got != want {
		t.Errorf("throttleMille(0, direct) = %d, want %d", got, want)
	}
	if got := throttleMille(0.25, true); got != 250 {
		t.Errorf("throttleMille(0.25, direct) = %d, want 250", got)
	}
	for _, bad := range []float64{1, 2} {
		if e, err := Open(Options{Device: "cpu", Throttle: bad}); err == nil {
			e.Close()
			t.Errorf("Open with Throttle %g: no error", bad)
		}
	}
}

// TestContentionOption: Options.Contention's names, its values as the
// kernels take them, the claim table's size, and the modes Open refuses.
func TestContentionOption(t *testing.T) {
	for _, c := range []struct {
		name string
		mode Contention
		want int
	}{{"default", ContentionDefault, contentionMode(DefaultContention)}, {"off", ContentionOff, 0}, {"check", ContentionCheck, 1}, {"claims", ContentionClaims, 2}} {
		got, err := ParseContention(c.name)
		if err != nil || got != c.mode || got.String() != c.name {
			t.Errorf("ParseContention(%q) = %v (%q), %v; want %v", c.name, got, got.String(), err, c.mode)
		}
		if m := contentionMode(c.mode); m != c.want {
			t.Errorf("contentionMode(%v) = %d, want %d", c.mode, m, c.want)
		}
	}
	if _, err := ParseContention("on"); err == nil {
		t.Error("ParseContention(\"on\"): no error")
	}
	for _, c := range []struct{ n, want int }{{1, 1}, {3, 4}, {65536, 65536}, {100000, 131072}, {100000000, maxClaimWords}} {
		if got := claimWords(c.n); got != c.want {
			t.Errorf("claimWords(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	for _, bad := range []Contention{-1, ContentionClaims + 1} {
		if e, err := Open(Options{Device: "cpu", Contention: bad}); err == nil {
			e.Close()
			t.Errorf("Open with Contention %d: no error", int(bad))
		}
	}
}
