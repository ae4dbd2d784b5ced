package stm

import "testing"

// TestThrottleOption: Options.Throttle's values as the kernels take them,
// and the ones Open refuses.
func TestThrottleOption(t *testing.T) {
	def := float64(DefaultThrottle)
	for _, c := range []struct {
		in   float64
		want int
	}{{0, max(0, int(def*1000+0.5))}, {-1, 0}, {-0.5, 0}, {0.25, 250}, {0.9999, 1000}, {1e-9, 1}} {
		if got := throttleMille(c.in); got != c.want {
			t.Errorf("throttleMille(%g) = %d, want %d", c.in, got, c.want)
		}
	}
	for _, bad := range []float64{1, 2} {
		if e, err := Open(Options{Device: "cpu", Throttle: bad}); err == nil {
			e.Close()
			t.Errorf("Open with Throttle %g: no error", bad)
		}
	}
}
