package server

import (
	"runtime"
	"time"
)

// Overdue updates. A shard's scheduler goroutine applies the queued index
// updates on a timer (policy.updateAt: every 0.1-1 ms under load). Go runs
// a timer, and the goroutine it wakes, only when some processor enters the
// runtime's scheduler, and the event loops that serve pipelined load
// seldom do: their system calls are raw, they do not block while their
// connections stay readable, and the CPU engine's searches never wait. So
// under such load the CPU engine's scheduler ran when the runtime preempted
// a loop: in ten of fifteen H200 runs of pipelined 10-key multi-gets 156-190
// update rounds in a server's 3 s, a writer to a pending-table stripe that
// filled meanwhile waiting for the next round (pending_full_waits 10-38),
// and 0.72-0.87 µs of server CPU per key against 0.63-0.74 in the runs with
// 326-889 rounds. With Options.UpdateKick, kick hands a caller's processor
// to the scheduler once the updates are overdue by that much: the caller
// wakes it (it is then the next goroutine its processor runs) and yields.
// It is off by default: on the 2-core VM (one loop) kicks 250 µs past due
// made pipelined single gets cheaper but 10-key multi-gets 2-8% dearer per
// key when the server had its core (BENCHMARKS.md, "The multi-get row's
// spread"); the H200's 8 loops have not run it.

// MaxUpdateKick is the largest Options.UpdateKick: a kick later than that
// leaves the pending table to fill as without kicks.
const MaxUpdateKick = 10 * time.Millisecond

// kick hands the calling goroutine's processor to the scheduler when the
// shard's queued updates are overdue by s.kickSlack at now (unix
// nanoseconds), and reports whether it did; never when s.kickSlack is 0.
// One caller kicks per kickSlack: the first moves the due time to now, so
// that the others go on, and a scheduler still not run kickSlack later is
// kicked again.
// Cost: an atomic load; when it kicks, a compare-and-swap, a wake-up and a
// yield (the scheduler's step runs on this processor before the caller
// resumes).
func (s *shard) kick(now int64) bool {
	due := s.updDue.Load()
	if due == 0 || s.kickSlack == 0 || now < due+s.kickSlack {
		return false
	}
	if !s.updDue.CompareAndSwap(due, now) {
		return false
	}
	s.signal()
	runtime.Gosched()
	return true
}

// kickOverdue kicks the scheduler of every shard whose updates are overdue
// (shard.kick), when Options.UpdateKick asks for kicks. Cost: nothing
// without; with, an atomic load per shard, and a clock read when some
// shard has updates queued; a yield per kick.
func (e *Engine) kickOverdue() {
	if e.opts.UpdateKick == 0 {
		return
	}
	var now int64
	for _, s := range e.shards {
		if s.updDue.Load() == 0 {
			continue
		}
		if now == 0 {
			now = time.Now().UnixNano()
		}
		if s.kick(now) {
			e.counts.updateKicks.Add(1)
		}
	}
}
