package ctxtest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records the first fatal failure and ends
// the goroutine as t.Fatal does.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runStops runs Stops on r in a goroutine of its own (Fatalf ends it).
func runStops(r *recorder, calls map[string]func(context.Context) error, pairs func() ([]int, []int), check func() error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		Stops(r, 3, calls, pairs, check)
	}()
	<-done
}

// TestStops runs Stops over a fake index, one slice of ints that a call
// appends to chunk by chunk (3 chunks, a look before each), and checks
// that it passes a call that stops before its first change and fails each
// way a call can go wrong.
func TestStops(t *testing.T) {
	tests := []struct {
		name string
		// stopsFirst: the call looks at its context before changing the
		// index; else it changes the index first.
		stopsFirst, ignores bool
		checkErr            error
		want                string // what the failure says; "" passes
	}{
		{"stops before each change", true, false, nil, ""},
		{"changes before it stops", false, false, nil, "1 pairs, want the 0 before the call"},
		{"ignores its context", true, true, nil, "want context.Canceled"},
		{"check fails", true, false, errors.New("broken"), "after 0 looks: broken"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var keys []int
			call := func(ctx context.Context) error {
				for c := range 3 {
					if !tc.stopsFirst {
						keys = append(keys, c)
					}
					if err := ctx.Err(); err != nil && !tc.ignores {
						return err
					}
				}
				if tc.stopsFirst {
					keys = append(keys, 0, 1, 2)
				}
				return nil
			}
			r := &recorder{TB: t}
			runStops(r, map[string]func(context.Context) error{"append": call},
				func() ([]int, []int) { return keys, keys }, func() error { return tc.checkErr })
			if tc.want == "" && r.failed != "" || !strings.Contains(r.failed, tc.want) {
				t.Errorf("Stops failed with %q, want %q", r.failed, tc.want)
			}
		})
	}
}
