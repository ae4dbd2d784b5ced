package bench

import (
	"bytes"
	"errors"
	"regexp"
	"testing"
)

func TestTimeCPU(t *testing.T) {
	var prepared, ran int
	sec, err := TimeCPU(2, 3, func() error { prepared++; return nil }, func() error { ran++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if prepared != 5 || ran != 5 {
		t.Errorf("prepare ran %d times, run %d times; want 5 each", prepared, ran)
	}
	if sec < 0 {
		t.Errorf("negative time %v", sec)
	}
}

func TestTimeCPUErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		reps    int
		prepare func() error
		run     func() error
	}{
		{"no reps", 0, nil, func() error { return nil }},
		{"prepare fails", 1, func() error { return boom }, func() error { return nil }},
		{"run fails", 1, nil, func() error { return boom }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := TimeCPU(0, tc.reps, tc.prepare, tc.run); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b)
	p.Printf("gpu: %s", "copy")
	p.Printf("done")
	if !regexp.MustCompile(`^\[ +\d+\.\ds\] gpu: copy\n\[ +\d+\.\ds\] done\n$`).MatchString(b.String()) {
		t.Errorf("progress output %q", b.String())
	}
	var nilP *Progress
	nilP.Printf("nothing")          // must not panic
	NewProgress(nil).Printf("none") // must not panic
}
