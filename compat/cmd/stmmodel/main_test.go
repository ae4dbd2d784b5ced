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

// TestWarpModel checks the warp model against what it must give: a single
// warp meets no other warp, and on a million accounts nearly all its lanes
// commit; every lane runs one attempt a round, spread or not (a losing
// transaction is never lost), so a round commits at most one transaction a
// lane; and hot accounts make lanes lose both inside their warp and to
// other warps.
func TestWarpModel(t *testing.T) {
	uniform := stm.Bank{Accounts: 1 << 20, Initial: 100, ReadSize: 100, Rounds: 1}
	one := simulateWarps(uniform, 1, 200, false, 1)
	if one.cross != 0 {
		t.Errorf("one warp: %v attempts lost to another warp, want 0", one.cross)
	}
	if one.perRound() < 31 || one.perRound() > 32 {
		t.Errorf("one warp on 1M accounts: %.2f commits a round, want nearly 32", one.perRound())
	}
	hot := stm.Bank{Accounts: 65536, Initial: 100, ReadSize: 100, Rounds: 1, Zipf: 0.99}
	for _, spread := range []bool{false, true} {
		r := simulateWarps(hot, 128, 300, spread, 1)
		if r.perRound() > 128*32 {
			t.Errorf("spread %v: %.1f commits a round from %d lanes", spread, r.perRound(), 128*32)
		}
		if r.inWarp == 0 || r.cross == 0 {
			t.Errorf("spread %v, 128 warps on hot accounts: %v in-warp and %v cross-warp losses, want both", spread, r.inWarp, r.cross)
		}
		if att := r.commits + r.inWarp + r.cross; att != float64(300*128*32) {
			t.Errorf("spread %v: %v attempts in 300 rounds of %d lanes, want one a lane a round", spread, att, 128*32)
		}
	}
}
