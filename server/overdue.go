package server

import (
	"runtime"
	"time"
)

// Overdue updates applied by their callers. A shard's scheduler goroutine
// applies the queued index updates on a timer (policy.updateAt: every
// 0.1-1 ms under load). Go runs a timer, and the goroutine it wakes, only
// when some processor enters the runtime's scheduler, and the event loops
// that serve pipelined load seldom do: their system calls are raw, they do
// not block while their connections stay readable, and the CPU engine's
// searches never wait. On the H200 (8 loops, pipelined 10-key multi-gets)
// the CPU engine's shard so ran 31-34 update rounds a second in half the
// runs, writers waiting for room in the pending table meanwhile
// (pending_full_waits 11-36), and those runs served 8.0-8.6 M keys/s
// against 9.9-10.7 in the runs with 128-351 rounds. Waking the scheduler
// and yielding (the former --update-kick) did not help: a yield does not
// run a goroutine that waits on a timer of another processor or sits in
// another processor's run queue (3458 kicks a second, 31 rounds).
//
// So the callers apply overdue updates themselves. At the end of each Do
// (and when a write finds its pending-table stripe full), a caller that
// finds a shard's queued updates overdue (shard.updDue: the policy's due
// time, and not before inlineUpdateLate, kept when the updates are
// queued) takes the shard's role if it is
// free (TryLock: it never waits) and runs the round the scheduler would
// run: the same runUpdates (counters, policy measurements, complete: the
// pending entries removed only once the index holds the writes, so reads
// keep reading their writes and never read a dropped item), then the
// retirement of the locations dropped (shard.step's). The scheduler
// goroutine still applies updates when no caller comes (idle periods), or
// when the role was taken.
//
// The role is mostly taken by the scheduler itself when its rounds
// starve. On the H200 (2026-11-29 20:27 UTC, counters of a diagnostic
// build) callers found the updates overdue 78-92 thousand times in a 2 s
// run and the role free only 2-4 times: in 96-99% of the checks the
// scheduler goroutine held it, in a step it could not finish for want of
// a processor (woken by a mutex or its timer into a run queue that no
// loop yields). So a caller that finds the updates overdue and the
// scheduler in a step (shard.stepping) yields its processor. With it the
// same runs made 611-850 update rounds a second instead of 30-36, with
// no pending-table waits instead of 16-34 (BENCHMARKS.md, "Overdue
// update rounds").
//
// Options.InlineUpdates says on which shards: "cpu" (the default) on the
// CPU engine's, "all" on GPU shards too, "off" on none. A GPU shard's
// round is an UpdateStaged call (one kernel launch and a synchronization,
// 13-30 µs on an H200) that the caller's connections would wait for,
// while its scheduler was not starved (913-1215 rounds a second, no
// pending-table waits, on the same H200 runs): its callers wait for
// their search batches and so enter Go's scheduler. The round is safe on
// a GPU shard (the staging is the role's, every driver call sets the
// device's context on its thread), so "all" exists to measure it.

// inlineUpdateLate is how long after the oldest queued update callers
// wait before they apply the queued updates themselves: five times the
// load policy's longest interval, so that callers stand in for a scheduler
// that is starved (30-36 rounds a second under pipelined multi-gets, see
// above) and leave the rounds to one that is merely late. A late round is
// larger, and every round takes the index's write lock against every
// loop's inline search. At the policy's own due time (100 µs on the CPU
// engine) the callers ran 5,400 rounds a second of about 7 jobs with one
// request in flight per connection (64 connections, 95:5, H200): 0.74-0.85
// M requests/s against 0.93-0.96 M with the callers' rounds off. Past 1 ms
// they ran about 930 a second (0.84-0.93 M); past 5 ms 144-173 (0.66-0.76
// M on a slower machine, where 1 ms read 0.62-0.65 and off 0.61-0.79), and
// none under pipelined 10-key multi-gets, whose scheduler then kept up
// (686-749 rounds a second) (BENCHMARKS.md, "Callers' update rounds only
// past a late bound").
const inlineUpdateLate = 5 * maxUpdateInterval

// Inline update modes (Options.InlineUpdates).
const (
	InlineUpdatesCPU = "cpu"
	InlineUpdatesAll = "all"
	InlineUpdatesOff = "off"
)

// applyOverdue runs the shard's queued update round on the calling
// goroutine when the updates are due at now (unix nanoseconds), or at once
// with force, and the shard's role is free; it returns the number of
// rounds it ran (runUpdates: one, more where a delete had to wait for an
// insert queued before it), 0 when it ran none.
// Never on a shard without inline updates (shard.inlineUpd), nor on a
// closing one (its scheduler drains it). The caller must hold no key lock
// that the round's completion needs (completeUpdate takes none) and must
// not hold the role. Cost: an atomic load; when due, a clock read by the
// caller, a TryLock, the round (an UpdateStaged call and its completion)
// and the retirement of the dropped locations; when due and the
// scheduler holds the role, a yield.
func (s *shard) applyOverdue(now int64, force bool) int {
	due := s.updDue.Load()
	if !s.inlineUpd || due == 0 || (!force && now < due) {
		return 0
	}
	if !s.role.TryLock() {
		if !force && s.stepping.Load() {
			// The scheduler goroutine is in a step, holding the role,
			// and the updates are overdue: under pipelined load it is
			// mostly waiting for a processor (in a run queue that no
			// loop yields, woken there by a mutex or its timer), not
			// running. Every caller that sees it yields, so that the
			// processor whose queue holds it runs it.
			runtime.Gosched()
		}
		return 0
	}
	defer s.role.Unlock()
	s.mu.Lock()
	nu, closed := s.upd.jobs(), s.closed
	s.mu.Unlock()
	if nu == 0 || closed {
		return 0
	}
	s.unlinkAwaited()
	s.urgent.Store(false)
	rounds := s.runUpdates()
	s.mu.Lock()
	np := len(s.pending)
	s.mu.Unlock()
	if np > 0 {
		s.retirePending()
	}
	return rounds
}

// applyOverdue applies the overdue updates of every shard with inline
// updates whose role is free (shard.applyOverdue), counting the rounds.
// Do defers it when some shard has inline updates. Cost: an atomic load
// per shard, and a clock read when some shard has updates queued.
func (e *Engine) applyOverdue() {
	var now int64
	for _, s := range e.shards {
		if !s.inlineUpd || s.updDue.Load() == 0 {
			continue
		}
		if now == 0 {
			now = time.Now().UnixNano()
		}
		if n := s.applyOverdue(now, false); n > 0 {
			e.counts.updateInline.Add(uint64(n))
		}
	}
}
