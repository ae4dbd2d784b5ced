package main

import (
	"math/rand/v2"

	"github.com/warpkv/warpkv/stm"
)

// warpPolicy is what the warp model does with a transaction that loses.
type warpPolicy int

const (
	// keepLane: a transaction that loses keeps its lane for the next
	// round, as the engine does.
	keepLane warpPolicy = iota
	// spreadLosers: a transaction that loses leaves its lane; the lanes
	// freed at the next round take the waiting transactions first, lane 0
	// of every warp before lane 1.
	spreadLosers
	// chainInWarp: no transaction loses to a lane of its own warp: one
	// that touches an account a lower lane of the warp commits commits
	// after it in the same round (as if it ran again on that lane's
	// writes), one chain level above; it loses only to another warp's
	// commit of the round, and keeps its lane.
	chainInWarp
)

func (p warpPolicy) String() string {
	switch p {
	case spreadLosers:
		return "is dealt to another warp"
	case chainInWarp:
		return "chains in its warp"
	}
	return "keeps its lane (the engine)"
}

// warpResult is a warp-model run's outcome, in attempts over all its rounds.
type warpResult struct {
	rounds  int
	commits float64 // update and read-only
	inWarp  float64 // update attempts a lower lane of their warp beat (Algorithm 1)
	cross   float64 // update attempts that passed their warp and met another warp's commit of the round
	levels  float64 // chainInWarp: the chain levels of the warps' rounds, summed (1 a round without chains)
}

// perRound returns commits a round.
func (r warpResult) perRound() float64 { return r.commits / float64(r.rounds) }

// meanLevels returns the mean chain levels of a warp's round (chainInWarp;
// 0 otherwise): the steps a round's commits would take one after another.
func (r warpResult) meanLevels(warps int) float64 { return r.levels / float64(r.rounds*warps) }

// simulateWarps models the GPU engine's direct commits as rounds of warps
// in lock-step, without time: every round each of warps warps runs its 32
// lanes' transactions (stm.Bank.Draw, the engines' tickets) from a
// snapshot taken at the round's start; the warps then commit in a random
// order. In a warp, lanes are decided in lane order (Algorithm 1): an
// update transaction that touches an account a lower lane of the warp
// commits loses (in-warp). One that passes loses to any earlier warp of
// the round that committed one of its accounts (its validation would see
// the newer write, or its lock would be held), else it commits. A
// read-only transaction always commits (a multi-version snapshot). With
// policy says what a losing transaction does (warpPolicy): keepLane as
// the engine, spreadLosers so that transactions that lost together are
// dealt to different warps, chainInWarp so that conflicts inside a warp
// are chained rather than lost. Cost: O(rounds x lanes x accounts a
// transaction).
func simulateWarps(b stm.Bank, warps, rounds int, policy warpPolicy, seed uint64) warpResult {
	spread := policy == spreadLosers
	lanes := warps * 32
	txs := make([]stm.BankTx, lanes)
	busy := make([]bool, lanes)
	var waiting []stm.BankTx
	ticket := uint64(0)
	written := make([]int, b.Accounts)   // the round whose commit last wrote each account (0: none)
	tentative := make([]int, b.Accounts) // the warp decision whose in-warp check last took each account
	var pass [32]bool                    // the lanes of the warp being decided that passed its in-warp check
	writer := make([]int, b.Accounts)    // chainInWarp: the warp whose commit last wrote each account
	level := make([]int, b.Accounts)     // chainInWarp: the chain level of the warp decision's last write of each account
	// lose leaves a losing transaction in its lane (the engine) or sends it
	// to wait for a lane (spread).
	lose := func(i int) {
		if spread {
			waiting = append(waiting, txs[i])
			txs[i] = stm.BankTx{}
			busy[i] = false
		}
	}
	r := rand.New(rand.NewPCG(seed, 2))
	order := make([]int, warps)
	for w := range order {
		order[w] = w
	}
	res := warpResult{rounds: rounds}
	decision := 0
	for round := 1; round <= rounds; round++ {
		// Free lanes take the waiting transactions first (spread), then new tickets.
		for l := range 32 {
			for w := range warps {
				i := w*32 + l
				if busy[i] {
					continue
				}
				if n := len(waiting); n > 0 {
					txs[i], waiting = waiting[0], waiting[1:]
				} else {
					b.Draw(seed, ticket, i, &txs[i])
					ticket++
				}
				busy[i] = true
			}
		}
		r.Shuffle(warps, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, w := range order {
			decision++
			if policy == chainInWarp {
				res.levels += float64(chainWarp(txs[w*32:w*32+32], busy[w*32:w*32+32], w, round, decision, written, writer, tentative, level, &res))
				continue
			}
			// The in-warp check first, in lane order, against the lanes
			// that passed it; then each lane that passed against the
			// earlier warps' commits of the round.
			for l := range 32 {
				i := w*32 + l
				tx := &txs[i]
				if tx.ReadOnly {
					res.commits++
					busy[i] = false
					continue
				}
				passed := true
				for _, m := range tx.Moves {
					passed = passed && tentative[m[0]] != decision && tentative[m[1]] != decision
				}
				if passed {
					for _, m := range tx.Moves {
						tentative[m[0]], tentative[m[1]] = decision, decision
					}
					pass[l] = true
					continue
				}
				pass[l] = false
				res.inWarp++
				lose(i)
			}
			for l := range 32 {
				i := w*32 + l
				if !pass[l] {
					continue
				}
				tx := &txs[i]
				ok := true
				for _, m := range tx.Moves {
					ok = ok && written[m[0]] != round && written[m[1]] != round
				}
				if !ok {
					res.cross++
					lose(i)
					continue
				}
				res.commits++
				for _, m := range tx.Moves {
					written[m[0]], written[m[1]] = round, round
				}
				busy[i] = false
			}
		}
	}
	return res
}

// chainWarp decides warp w's lanes under chainInWarp and returns the
// chain levels its round takes: in lane order, a read-only transaction
// commits; an update commits unless another warp's commit of the round
// wrote one of its accounts (written, writer), one level above the
// highest level of a lower lane of this warp that wrote one of them
// (tentative holds the decision that last took each account, level its
// level). Committed lanes are freed (busy false).
func chainWarp(txs []stm.BankTx, busy []bool, w, round, decision int, written, writer, tentative, level []int, res *warpResult) int {
	levels := 1
	for l := range txs {
		tx := &txs[l]
		if tx.ReadOnly {
			res.commits++
			busy[l] = false
			continue
		}
		lost, lv := false, 0
		for _, m := range tx.Moves {
			for _, a := range m {
				lost = lost || (written[a] == round && writer[a] != w)
				if tentative[a] == decision {
					lv = max(lv, level[a]+1)
				}
			}
		}
		if lost {
			res.cross++
			continue
		}
		levels = max(levels, lv+1)
		res.commits++
		busy[l] = false
		for _, m := range tx.Moves {
			for _, a := range m {
				written[a], writer[a] = round, w
				tentative[a], level[a] = decision, lv
			}
		}
	}
	return levels
}
