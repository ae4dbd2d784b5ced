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
	one := simulateWarps(uniform, 1, 200, keepLane, 1)
	if one.cross != 0 {
		t.Errorf("one warp: %v attempts lost to another warp, want 0", one.cross)
	}
	if one.perRound() < 31 || one.perRound() > 32 {
		t.Errorf("one warp on 1M accounts: %.2f commits a round, want nearly 32", one.perRound())
	}
	hot := stm.Bank{Accounts: 65536, Initial: 100, ReadSize: 100, Rounds: 1, Zipf: 0.99}
	for _, policy := range []warpPolicy{keepLane, spreadLosers} {
		r := simulateWarps(hot, 128, 300, policy, 1)
		if r.perRound() > 128*32 {
			t.Errorf("%v: %.1f commits a round from %d lanes", policy, r.perRound(), 128*32)
		}
		if r.inWarp == 0 || r.cross == 0 {
			t.Errorf("%v, 128 warps on hot accounts: %v in-warp and %v cross-warp losses, want both", policy, r.inWarp, r.cross)
		}
		if att := r.commits + r.inWarp + r.cross; att != float64(300*128*32) {
			t.Errorf("%v: %v attempts in 300 rounds of %d lanes, want one a lane a round", policy, att, 128*32)
		}
	}
}

// TestWarpModelChains checks the chained policy: no transaction loses to
// its own warp, one attempt a lane a round, chains of more than one level
// under hot accounts, and at least the engine's commits a round there (a
// chained lane commits where the engine's would lose); on a million
// uniform accounts a warp's lanes rarely meet, so its rounds take about
// one level.
func TestWarpModelChains(t *testing.T) {
	hot := stm.Bank{Accounts: 65536, Initial: 100, ReadSize: 100, Rounds: 1, Zipf: 0.99}
	c := simulateWarps(hot, 128, 300, chainInWarp, 1)
	if c.inWarp != 0 {
		t.Errorf("chains: %v attempts lost inside their warp, want 0", c.inWarp)
	}
	if att := c.commits + c.cross; att != float64(300*128*32) {
		t.Errorf("chains: %v attempts in 300 rounds of %d lanes, want one a lane a round", att, 128*32)
	}
	if lv := c.meanLevels(128); lv <= 1 {
		t.Errorf("chains on hot accounts: %.2f levels a round, want more than 1", lv)
	}
	if e := simulateWarps(hot, 128, 300, keepLane, 1); c.perRound() < e.perRound() {
		t.Errorf("chains: %.1f commits a round, under the engine's %.1f", c.perRound(), e.perRound())
	}
	uniform := stm.Bank{Accounts: 1 << 20, Initial: 100, ReadSize: 100, Rounds: 1}
	if lv := simulateWarps(uniform, 32, 200, chainInWarp, 1).meanLevels(32); lv > 1.05 {
		t.Errorf("chains on 1M uniform accounts: %.2f levels a round, want about 1", lv)
	}
}
