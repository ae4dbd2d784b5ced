package main

import (
	"math"
	"testing"

	"github.com/warpkv/warpkv/stm"
)

// TestModelRates checks the model against what it must give: one thread
// never aborts and commits once per window; with many threads on hot
// accounts some attempts abort; and, at a fixed thread count, halving the
// window doubles the rate (the model has no other time scale).
func TestModelRates(t *testing.T) {
	bank := stm.Bank{Accounts: 65536, Initial: 100, ReadSize: 100, Rounds: 1, Zipf: 0.99}
	const span = 0.05
	one := simulate(bank, 1, 10e-6, 20e-6, span, 1)
	if one.aborts != 0 {
		t.Errorf("one thread: %v aborts, want 0", one.aborts)
	}
	if want := span / 10e-6; math.Abs(one.commits-want) > 0.02*want {
		t.Errorf("one thread, 10 µs windows: %v commits in %v s, want about %v", one.commits, span, want)
	}
	hot := simulate(bank, 1024, 10e-6, 20e-6, span, 1)
	if hot.aborts == 0 {
		t.Errorf("1024 threads on hot accounts: no aborts")
	}
	half := simulate(bank, 1024, 5e-6, 10e-6, span/2, 1)
	if r := (half.commits / (span / 2)) / (hot.commits / span); r < 1.8 || r > 2.2 {
		t.Errorf("halving the window multiplied the rate by %.2f, want about 2", r)
	}
}
