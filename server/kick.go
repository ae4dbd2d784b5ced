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
// 326-889 rounds. kick hands a caller's processor to the scheduler once the
// updates are overdue: the caller wakes it (it is then the next goroutine
// its processor runs) and yields.

// kickSlack is how far past their due time the queued updates may go
// before a caller kicks the scheduler: a timer may fire that late when
// processors are idle, and a kick costs the caller the update round.
const kickSlack = 250 * time.Microsecond

// kick hands the calling goroutine's processor to the scheduler when the
// shard's queued updates are overdue by kickSlack at now (unix
// nanoseconds), and reports whether it did. One caller kicks per
// kickSlack: the first moves the due time to now plus kickSlack, so that
// the others go on, and a scheduler still not run by then is kicked again.
// Cost: an atomic load; when it kicks, a compare-and-swap, a wake-up and a
// yield (the scheduler's step runs on this processor before the caller
// resumes).
func (s *shard) kick(now int64) bool {
	due := s.updDue.Load()
	if due == 0 || now < due+int64(kickSlack) {
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
// (shard.kick). Cost: an atomic load per shard, and a clock read when some
// shard has updates queued; a yield per kick.
func (e *Engine) kickOverdue() {
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
