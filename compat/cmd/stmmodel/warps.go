package main

import (
	"math/rand/v2"

	"github.com/warpkv/warpkv/stm"
)

// warpResult is a warp-model run's outcome, in attempts over all its rounds.
type warpResult struct {
	rounds  int
	commits float64 // update and read-only
	inWarp  float64 // update attempts a lower lane of their warp beat (Algorithm 1)
	cross   float64 // update attempts that passed their warp and met another warp's commit of the round
}

// perRound returns commits a round.
func (r warpResult) perRound() float64 { return r.commits / float64(r.rounds) }

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
// spread false a losing transaction keeps its lane for the next round, as
// the engine does; with spread true it leaves its lane, and the lanes
// freed at the next round take the waiting transactions first, lane 0 of
// every warp before lane 1, so that transactions that lost together are
// dealt to different warps. Cost: O(rounds x lanes x accounts a transaction).
func simulateWarps(b stm.Bank, warps, rounds int, spread bool, seed uint64) warpResult {
	lanes := warps * 32
	txs := make([]stm.BankTx, lanes)
	busy := make([]bool, lanes)
	var waiting []stm.BankTx
	ticket := uint64(0)
	written := make([]int, b.Accounts)   // the round whose commit last wrote each account (0: none)
	tentative := make([]int, b.Accounts) // the warp decision whose in-warp check last took each account
	var pass [32]bool                    // the lanes of the warp being decided that passed its in-warp check
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
