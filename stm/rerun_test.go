package stm

import "testing"

// TestRerunOption: Options.Rerun's names, its values as the kernels take
// them (g->rerun: 0 off, 1 clock, 2 items), and the modes Open refuses.
func TestRerunOption(t *testing.T) {
	for _, c := range []struct {
		name string
		mode RerunMode
		want int
	}{{"off", RerunOff, 0}, {"clock", RerunClock, 1}, {"items", RerunItems, 2}} {
		got, err := ParseRerun(c.name)
		if err != nil || got != c.mode || got.String() != c.name {
			t.Errorf("ParseRerun(%q) = %v (%q), %v; want %v", c.name, got, got.String(), err, c.mode)
		}
		if int(c.mode) != c.want {
			t.Errorf("%v is %d to the kernels, want %d", c.mode, int(c.mode), c.want)
		}
	}
	if _, err := ParseRerun("on"); err == nil {
		t.Error("ParseRerun(\"on\"): no error")
	}
	for _, bad := range []RerunMode{-1, RerunItems + 1} {
		if e, err := Open(Options{Device: "cpu", Rerun: bad}); err == nil {
			e.Close()
			t.Errorf("Open with Rerun %d: no error", int(bad))
		}
	}
}
