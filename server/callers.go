package server

import (
	"runtime"
	"slices"
	"time"
)

// Callers launch search batches. With the scheduler alone launching a GPU
// shard's batches, every request pays two goroutine hand-offs on its way
// (the request that opens a batch wakes the scheduler, the scheduler wakes
// each waiter), and the event loops, which run on every processor, keep
// the scheduler waiting for one: with one request in flight per
// connection the H200 measured 45 µs of waiting per round for a search
// call of 11.5 µs. So by default (Options.SearchLaunch "callers") a caller
// waiting for its batch launches the filling batch itself when no one else
// is doing the scheduler's work (the shard's role is free): the first
// caller of an idle shard launches at once, and the callers that arrive
// while a batch runs fill the next one, which the first of them to find
// the role free launches when the running one is done. Batches so form
// from what arrives during one search call, with no timer and no hand-off.
// A caller spins (yielding its processor) for at most callerSpin; then it
// marks the shard stalled, wakes the scheduler, which launches the batch
// at its next step, and parks. The scheduler still applies the updates and
// launches batches that are full or stalled.

// With SearchLaunchConcurrent, callers launch as with "callers", but hold
// the shard's role only to take the filling batch (and to retire the
// unlinks pending against it), not during its search call: the next
// caller takes and launches the next batch at once, and the batches of
// different event loops are searched at the same time, each in its own
// batch buffer (a slot of the persistent GPU search, whose resident kernel
// serves every slot at once: hashindex.PersistentSearch). A caller then
// launches only the batch it posted to, so that it never waits on another
// loop's search call, and not at all while every other batch buffer is
// still in use (it spins until one is free, or its own batch delivered).

// Search launch modes (Options.SearchLaunch).
const (
	SearchLaunchCallers    = "callers"
	SearchLaunchScheduler  = "scheduler"
	SearchLaunchConcurrent = "concurrent"
)

// A SearchLaunchMode is one mode of Options.SearchLaunch: its name and
// what it does, in a phrase for usage text.
type SearchLaunchMode struct {
	Name, Doc string
}

// SearchLaunchModes returns the search launch modes, the default first:
// the one table that the engine's check, serve's --search-launch flag
// (its usage text and errors) and bench serve's engine specs use. Cost: a
// small allocation.
func SearchLaunchModes() []SearchLaunchMode {
	return []SearchLaunchMode{
		{SearchLaunchCallers, "a request waiting for its batch launches it when none runs"},
		{SearchLaunchConcurrent, "a request waiting for its batch launches it at once, beside the batches running"},
		{SearchLaunchScheduler, "the shard's scheduler goroutine, under the batch policy"},
	}
}

// SearchLaunchNames returns the names of the search launch modes, the
// default first.
func SearchLaunchNames() []string {
	ms := SearchLaunchModes()
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return names
}

// IsSearchLaunch reports whether name is a search launch mode.
func IsSearchLaunch(name string) bool { return slices.Contains(SearchLaunchNames(), name) }

// callerSpin is the longest a caller spins for its search batch before it
// leaves the launch to the scheduler and parks: a few search calls.
const callerSpin = 200 * time.Microsecond

// callerHotSpin is how long of callerSpin a caller spins without yielding
// its processor: about a GPU search call (6-7 µs on an H200) and the wait
// for the one before it. A goroutine that yields goes to the back of the
// runtime's queue; on a server whose event loops keep every processor
// busy it waits there for another loop's round when its answer is in
// (a resident search call measured 24-26 µs instead of 6.5-7.4 µs that
// way: hashindex.BenchmarkPersistentSearch).
const callerHotSpin = 20 * time.Microsecond

// launch runs the shard's filling search batch when it has jobs and the
// role is free, and reports whether it ran one. With s.concurrent it runs
// only own (the batch the caller posted to), when a batch buffer
// is free, and searches it after giving the role back. Cost: when it runs,
// a search call (the caller does the scheduler's work for every waiter of
// the batch); otherwise two atomic loads.
func (s *shard) launch(own *searchBatch) bool {
	if n, _ := s.q.queued(); n == 0 || (s.concurrent && s.q.cur.Load() != own) || !s.role.TryLock() {
		return false
	}
	if n, _ := s.q.queued(); n == 0 || s.q.closed.Load() || (s.concurrent && s.q.cur.Load() != own) {
		s.role.Unlock()
		return false
	}
	now := time.Now()
	if !s.concurrent {
		s.runSearches(now)
		s.role.Unlock()
		return true
	}
	next := s.freeNow(s.q.cur.Load())
	if next == nil {
		s.role.Unlock()
		return false
	}
	r := s.takeSearch(next)
	s.pol.searched(now, r.n, time.Duration(s.lastCall.Load()))
	s.role.Unlock()
	s.finishSearch(r)
	return true
}

// stall hands the launch of the shard's filling batch to the scheduler.
func (s *shard) stall() {
	s.stalled.Store(true)
	s.signal()
}

// await receives one token on wake per ticket of ts, the results of the
// searches posted to the tickets' shards. On shards whose callers launch
// (shard.callers) it spins until the first token, launching the batches
// the tickets were posted to while it can, for at most callerSpin (the
// first callerHotSpin of it without yielding its processor); then it
// stalls those shards (their schedulers launch the batches left) and
// blocks for the rest.
func await(wake chan struct{}, ts []ticket) {
	got, k := 0, len(ts)
	callers := false
	for _, t := range ts {
		callers = callers || t.sh.callers
	}
	// Launches stop at the first token: a caller that holds a delivered
	// batch (a reader until its Do releases it) must not wait in
	// freeBatch for that batch to be free.
	var deadline time.Time
	hot := k > 0 && ts[0].sh.hotSpin
	for spins := 0; got == 0 && callers; spins++ {
		select {
		case <-wake:
			got++
			continue
		default:
		}
		ran := false
		for _, t := range ts {
			if t.sh.callers && t.sh.launch(t.b) {
				ran = true
			}
		}
		if ran {
			continue
		}
		if spins&31 == 31 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(callerSpin)
			} else if now.After(deadline) {
				break
			}
			hot = hot && deadline.Sub(now) > callerSpin-callerHotSpin
		}
		if !hot {
			runtime.Gosched()
		}
	}
	if callers && got < k {
		// The scheduler launches what is left: after the first token
		// (several shards) or after callerSpin.
		for _, t := range ts {
			if t.sh.callers {
				t.sh.stall()
			}
		}
	}
	for ; got < k; got++ {
		<-wake
	}
}
