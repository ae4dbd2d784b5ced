package stm

import (
	"fmt"
	"time"
)

// RequestStages splits the time of the GPU engine's commit requests (one
// client warp's transactions at one server) into the stages they pass,
// each summed over the requests (ServerStats.Requests of them). The
// kernels time them with the server SM's cycle counter (Load to Busy) or
// the GPU's global timer (Ring, InServer, Client), which every SM shares.
// A request's stages in order: the client sends it (its round's first send
// starts the clock); it waits in the server's request ring until a worker
// takes it (Ring); the worker loads it (Load), validates it against the
// log (Validate), reserves its slots, waits for its turn
// (ServerStats.LockWait), logs its survivors (ServerStats.TurnHold, per
// turn taken), checks them against the entries logged since its first scan
// (FinalCheck) and replies (Reply); the client then sees the reply (Client
// less InServer).
type RequestStages struct {
	Ring       time.Duration // from the client's send to a worker taking the request from the ring
	Load       time.Duration // the worker reading the request's transactions' snapshots and set sizes
	Validate   time.Duration // the first validation: each accessed item's newest logged write against its transaction's snapshot (ServerStats.Scanned counts the final checks' log entries)
	FinalCheck time.Duration // the final checks of the survivors against the entries logged since their first scan
	Reply      time.Duration // writing the results and the reply word (a device-wide fence)
	Busy       time.Duration // a worker's whole time on the request, taken to replied
	InServer   time.Duration // from the client's send to the worker's reply
	// Client is the time from the client's send to its seeing the reply,
	// summed over ClientReplies replies (the requests, counted by the
	// clients).
	Client        time.Duration
	ClientReplies uint64
}

// meanOf returns d per n (0 when n is 0), rounded to the nanosecond.
func meanOf(d time.Duration, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return (d / time.Duration(n)).Round(time.Nanosecond)
}

// stagesString is a request's mean time in each stage, e.g. "per request:
// ring 150µs, load 1µs, validate 7µs, turn wait 2.8µs, own turn 1µs, final
// check 1µs, reply 1µs; a worker busy 15µs on one (95% of the workers'
// time); client sees the reply 165µs after sending (the server replied at
// 160µs)", or "" when the stages were not timed. Cost: O(1).
func (s ServerStats) stagesString() string {
	st := s.Stages
	if s.Requests == 0 || st.Busy == 0 {
		return ""
	}
	busy := 0.0
	if s.WorkerTime > 0 {
		busy = 100 * float64(st.Busy) / float64(s.WorkerTime)
	}
	return fmt.Sprintf("per request: ring %v, load %v, validate %v, turn wait %v, own turn %v, final check %v, reply %v; "+
		"a worker busy %v on one (%.0f%% of the workers' time); client sees the reply %v after sending (the server replied at %v)",
		meanOf(st.Ring, s.Requests), meanOf(st.Load, s.Requests), meanOf(st.Validate, s.Requests),
		meanOf(s.LockWait, s.Requests), meanOf(s.TurnHold, s.Requests), meanOf(st.FinalCheck, s.Requests), meanOf(st.Reply, s.Requests),
		meanOf(st.Busy, s.Requests), busy, meanOf(st.Client, st.ClientReplies), meanOf(st.InServer, s.Requests))
}
