package engine

import (
	"strings"
	"testing"
	"time"
)

// TestFormatSteps renders a trace's steps with their totals (no GPU).
func TestFormatSteps(t *testing.T) {
	steps := []Step{
		{Name: "start", Host: 2 * time.Millisecond},
		{Name: "upload", Device: 1500 * time.Microsecond, DeviceFrom: 1500 * time.Microsecond, Host: time.Millisecond},
		{Name: "sort round 0", Device: 2 * time.Millisecond, DeviceFrom: 3500 * time.Microsecond, Host: 3 * time.Millisecond, Syncs: 1},
	}
	out := FormatSteps(steps)
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
