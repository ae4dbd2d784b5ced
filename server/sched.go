package server

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/hashindex"
)

// A shard is one hash index (one GPU, or the CPU engine) and the scheduler
// goroutine that feeds it batches. Connection goroutines post searches into
// the shard's search batches (searchq.go) and queue update requests; the
// scheduler launches the filling search batch and the queued updates when
// its policy (policy.go) says they are due. One goroutine calls the index,
// so a search never runs while an update moves cells: a key that is
// present is always found.
type shard struct {
	ix       *hashindex.Index
	pol      policy
	maxBatch int
	lat      *latencyHist // search batch call latencies
	updLat   *latencyHist // update round call latencies
	sizes    *latencyHist // jobs per search batch
	prof     *profile     // nil unless profiling
	q        *searchQueue
	inline   *inlineReaders // not nil when callers search inline (inline.go)
	full     atomic.Bool    // a request found the filling search batch full
	stalled  atomic.Bool    // a caller stopped waiting to launch its batch itself (callers.go)
	callers  bool           // callers launch search batches themselves (callers.go)
	// concurrent: callers search the batches they launch without the
	// role, so that batches run at the same time (callers.go).
	concurrent bool
	lastCall   atomic.Int64 // the last search call's nanoseconds, for the policy
	// hotSpin: callers may spin without yielding (callerHotSpin); not
	// with one processor, where that keeps off the goroutine they wait
	// for. Read once: GOMAXPROCS(0) takes the runtime's lock.
	hotSpin bool
	// role is held by whoever does the scheduler's work: the scheduler
	// goroutine in each step, or a caller launching a search batch
	// (callers.go). What the comments call "scheduler only" is the role's.
	role   sync.Mutex
	urgent atomic.Bool // a write waits for room in the pending table

	mu       sync.Mutex
	upd      *updateList // the updates queued, applied by the next round
	updSpare *updateList // the list the last round applied, for reuse
	updSince time.Time   // when the oldest queued update was queued
	// updDue is when callers that apply overdue updates (overdue.go) may
	// apply the queued ones, in unix nanoseconds (0: none queued): their
	// due time, and not before inlineUpdateLate after the oldest was
	// queued. Set under mu, read without it. inlineUpd: callers apply them
	// (Options.InlineUpdates).
	updDue    atomic.Int64
	inlineUpd bool
	// stepping: the scheduler goroutine holds the role (a step); callers
	// that find updates overdue and the role so held yield (overdue.go).
	stepping atomic.Bool
	applying bool // the scheduler (or a caller, overdue.go) is applying updates
	closed   bool
	pending  []pendingUnlink   // items to unlink after the next search batch
	spare    [][]pendingUnlink // memory of unlinked lists, for reuse (under mu)
	untils   [][]batchGen      // scheduler only: memory of awaitUnlink.until lists
	awaiting []awaitUnlink     // scheduler only: unlinks waiting for earlier batches' readers
	awaitN   atomic.Int32      // len(awaiting), for quiesce
	toUnlink atomic.Int64      // locations queued by deferUnlinks and not yet unlinked, for quiesce
	unlink   func([]pendingUnlink)
	complete func(*updateList) // called by the scheduler with each applied list
	wake     chan struct{}     // capacity 1: work arrived
	done     chan struct{}     // closed when the loop exits

	// scheduler-owned: the update staging (pinned memory on a GPU, so
	// batches go to the device without a copy on the host) and scratch
	st    *hashindex.Staging
	timer *time.Timer // sleepUntil's, reused
	stats shardStats
}

// shardStats counts the batches a shard launched (read under shard.mu).
type shardStats struct {
	searchBatches, searchJobs uint64
	updateBatches, updateJobs uint64
	updateRounds              uint64
	overwrites, displaced     uint64
	maxSearchBatch            uint64
	err                       error // the last index error
}

// pendingUnlink is an item location the index dropped or deleted, to be
// unlinked from the store once no read can still hold it from a search.
type pendingUnlink struct {
	loc   uint32
	hash  uint64 // the item's hash (matchHash) or the dropped cell's key hash
	match uint8
}

// How a pendingUnlink recognizes its item.
const (
	matchHash      = iota // the item's hash equals hash
	matchSignature        // the item's signature equals hash's
	matchAny              // any linked item (a displaced cell)
)

// deferUnlinks queues the locations of ps for unlinking after the shard's
// next search batch has delivered its results: a read whose search found
// a location just before the update that dropped it can still acquire the
// old item (it overlaps the write, so the old value is a correct answer)
// instead of searching again under the key's lock. ps stays the caller's.
// Cost: one lock of the shard's mutex.
func (s *shard) deferUnlinks(ps []pendingUnlink) {
	s.toUnlink.Add(int64(len(ps)))
	s.mu.Lock()
	s.pending = append(s.pending, ps...)
	s.mu.Unlock()
	s.signal()
}

// takePending returns and clears the pending unlinks; the caller hands the
// list back with unlinked once done with it.
func (s *shard) takePending() []pendingUnlink {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending
	s.pending = nil
	if k := len(s.spare); k > 0 {
		s.pending, s.spare = s.spare[k-1], s.spare[:k-1]
	}
	return p
}

// unlinked unlinks a list from takePending and keeps its memory.
func (s *shard) unlinked(p []pendingUnlink) {
	if len(p) > 0 {
		s.unlink(p)
		s.toUnlink.Add(-int64(len(p)))
	}
	clear(p)
	s.mu.Lock()
	if cap(p) > 0 && len(s.spare) < 8 {
		s.spare = append(s.spare, p[:0])
	}
	s.mu.Unlock()
}

// shardHooks are what a shard's scheduler reports to and calls back into
// its engine.
type shardHooks struct {
	batches              int // search batch buffers (0: searchBatches)
	searchLat, updateLat *latencyHist
	searchSize           *latencyHist // jobs per search batch (a count, not a duration)
	unlink               func([]pendingUnlink)
	complete             func(*updateList)
	prof                 *profile // nil unless profiling
	inline               bool     // callers search the index inline (SearchShared)
	// launch is who launches the search batches (Options.SearchLaunch;
	// "" is the default, callers): the shard's callers (callers.go) but
	// under SearchLaunchScheduler or with inline searches, which post
	// no batches; at the same time under SearchLaunchConcurrent.
	launch    string
	inlineUpd bool // callers apply overdue updates (Options.InlineUpdates, overdue.go)
	// hold, in tests, keeps the scheduler goroutine from its first step
	// until it is closed.
	hold <-chan struct{}
}

// newShard starts the scheduler of ix with search batch buffers from
// newSpace, under the fixed or the load policy with interval C.
func newShard(ix *hashindex.Index, fixed bool, interval time.Duration, maxBatch int, newSpace func() (searchSpace, error), h shardHooks) (*shard, error) {
	if h.batches == 0 {
		h.batches = searchBatches
	}
	q, err := newSearchQueue(h.batches, newSpace)
	if err != nil {
		return nil, err
	}
	s := &shard{ix: ix, maxBatch: maxBatch, q: q, lat: h.searchLat, updLat: h.updateLat, sizes: h.searchSize, prof: h.prof,
		unlink: h.unlink, complete: h.complete, upd: new(updateList), updSpare: new(updateList),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.pol.fixed, s.pol.interval = fixed, interval
	if h.inline {
		s.inline = new(inlineReaders)
	}
	s.callers = h.launch != SearchLaunchScheduler && !h.inline
	s.concurrent = s.callers && h.launch == SearchLaunchConcurrent
	s.hotSpin = runtime.GOMAXPROCS(0) > 1
	s.inlineUpd = h.inlineUpd
	go s.loop(h.hold)
	return s, nil
}

// hurry asks the scheduler to apply the queued updates now.
func (s *shard) hurry() {
	s.urgent.Store(true)
	s.signal()
}

func (s *shard) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// close stops the scheduler after it has served the queued requests; later
// searches fail.
func (s *shard) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
	<-s.done
	s.q.closed.Store(true)
}

// loop is the scheduler: it waits for work, launches the filling search
// batch and the queued updates when the policy says they are due (or a
// queue is full, or the shard is closing), and sleeps until the next one
// is due otherwise. Updates go first when both are due. Each step runs
// holding the shard's role, which callers that launch search batches
// themselves (callers.go) take too; the waits do not hold it.
func (s *shard) loop(hold <-chan struct{}) {
	defer close(s.done)
	if hold != nil {
		<-hold
	}
	defer func() {
		if s.st != nil {
			s.st.Free()
		}
		s.q.free()
	}()
	for {
		s.role.Lock()
		s.stepping.Store(true)
		w, until := s.step()
		s.stepping.Store(false)
		s.role.Unlock()
		switch w {
		case waitExit:
			return
		case waitWork:
			<-s.wake
		case waitTimer:
			s.sleepUntil(until, false)
		case waitSpin:
			s.sleepUntil(until, true)
		}
	}
}

// What the scheduler waits for after a step.
const (
	waitNone  = iota // nothing: step again
	waitWork         // work to arrive (a signal)
	waitTimer        // until a time, or work
	waitSpin         // until a time, spinning its last timerSlack, or work
	waitExit         // nothing: the shard is closed and drained
)

// step is one decision of the scheduler, holding the role: it unlinks
// what it can, runs the updates and the search batch that are due, and
// returns what to wait for before the next step.
func (s *shard) step() (wait int, until time.Time) {
	s.unlinkAwaited()
	ns, opened := s.q.queued()
	s.mu.Lock()
	nu, since, np, closed := s.upd.jobs(), s.updSince, len(s.pending), s.closed
	s.mu.Unlock()
	if np > 0 {
		s.retirePending()
		np = 0
	}
	if ns == 0 && nu == 0 {
		if closed && len(s.awaiting) == 0 {
			return waitExit, until
		}
		return waitWork, until
	}
	now := time.Now()
	searchAt := s.pol.searchAt(ns, opened)
	updateAt := s.pol.updateAt(since)
	searchDue := ns > 0 && (closed || s.full.Load() || s.stalled.Load() || (!s.callers && !now.Before(searchAt)))
	updateDue := nu > 0 && (closed || nu >= s.maxBatch || s.urgent.Load() || !now.Before(updateAt))
	if !searchDue && !updateDue {
		switch {
		case nu == 0 && s.callers:
			// The callers launch the searches (or stall and signal).
			return waitWork, until
		case ns == 0 || s.callers:
			// Only updates are due later, and no reply waits for them
			// (or the callers launch the searches): sleep on a timer
			// (or until work arrives) rather than spin.
			return waitTimer, updateAt
		}
		next := searchAt
		if nu > 0 && updateAt.Before(next) {
			next = updateAt
		}
		return waitSpin, next
	}
	if updateDue {
		s.urgent.Store(false)
		s.runUpdates()
	}
	if searchDue {
		s.runSearches(now)
	}
	return waitNone, until
}

// retirePending retires the dropped locations pending now, so that
// unlinks never wait for a search batch or a lull (a client that sends its
// next set as soon as the last is acknowledged leaves none: every replaced
// item would stay allocated). A batch taken later cannot find the dropped
// locations, and the taken batches that may hold them (delivered, or
// searched meanwhile without the role under SearchLaunchConcurrent, and,
// inline, the searches in flight) are waited for. The caller holds the
// role.
func (s *shard) retirePending() {
	s.retire(s.takePending(), s.deliveredReaders(s.untilList()))
}

// unlinkAwaited unlinks the awaited lists whose batches are done with.
func (s *shard) unlinkAwaited() {
	k := 0
	for _, a := range s.awaiting {
		ready := true
		for _, bg := range a.until {
			if bg.b.gen == bg.gen && bg.b.readers.Load() > 0 {
				ready = false
				break
			}
		}
		if ready && a.inline && !s.inline.passed(a.epoch) {
			ready = false
		}
		if ready {
			s.unlinked(a.list)
			clear(a.until)
			if len(s.untils) < 8 {
				s.untils = append(s.untils, a.until[:0])
			}
		} else {
			s.awaiting[k] = a
			k++
		}
	}
	clear(s.awaiting[k:])
	s.awaiting = s.awaiting[:k]
	s.awaitN.Store(int32(k))
}

// timerSlack is the shortest wait left to a timer: Go's timers may
// oversleep by about a millisecond when the process is idle, far more than
// a batch interval, so shorter waits spin (yielding the processor).
const timerSlack = 2 * time.Millisecond

// sleepUntil waits until t or until new work arrives (the loop then
// decides again). Without spin, or with more than timerSlack to go, it
// sleeps on a timer (Go's timers may oversleep by about a millisecond when
// the process is idle); with spin, the last timerSlack spins yielding the
// processor, which costs the scheduler's core only while a search waits
// for its batch. With a single processor (GOMAXPROCS 1) it never spins: a
// goroutine that keeps yielding there keeps the runtime from polling the
// network, and the connections' replies would wait for it.
func (s *shard) sleepUntil(t time.Time, spin bool) {
	spin = spin && runtime.GOMAXPROCS(0) > 1
	d := time.Until(t)
	if spin {
		d -= timerSlack
	}
	if d > 0 {
		if s.timer == nil {
			s.timer = time.NewTimer(d)
		} else {
			s.timer.Reset(d) // Go 1.23 timers: no stale value after Stop or Reset
		}
		select {
		case <-s.timer.C:
		case <-s.wake:
			s.timer.Stop()
			return
		}
	}
	for spin && time.Now().Before(t) {
		select {
		case <-s.wake:
			return
		default:
			runtime.Gosched()
		}
	}
}

// staging returns the shard's update staging with room for n jobs,
// growing it (with headroom) when a batch outgrows it.
func (s *shard) staging(n int) (*hashindex.Staging, error) {
	if s.st != nil && s.st.Cap() >= n {
		return s.st, nil
	}
	if s.st != nil {
		if err := s.st.Free(); err != nil {
			return nil, err
		}
		s.st = nil
	}
	st, err := s.ix.NewStaging(max(n+n/2, s.maxBatch+s.maxBatch/4))
	if err != nil {
		return nil, err
	}
	s.st = st
	return st, nil
}

// awaitUnlink is a list of locations to unlink once the batches that
// were delivered (and not yet done with) when the list was taken are done
// with, and, when inline, the inline searches of epoch and before.
type awaitUnlink struct {
	list   []pendingUnlink
	until  []batchGen
	epoch  uint64
	inline bool
}

// batchGen identifies a use of a batch buffer.
type batchGen struct {
	b   *searchBatch
	gen uint64
}

// runSearches launches the filling search batch and delivers its results.
// The locations dropped before it (pending unlinks) cannot be in its
// results, only in those of batches taken earlier: they are unlinked
// once every such batch is done with (its readers have acquired their
// items), at once if there is none. It clears the full and stalled marks
// first: a request that marks the shard after the batch is taken keeps
// its mark for the next one. The caller holds the role throughout.
func (s *shard) runSearches(now time.Time) {
	r := s.takeSearch(s.freeBatch(s.q.cur.Load()))
	s.pol.searched(now, r.n, s.finishSearch(r))
}

// searchRun is a taken search batch of n jobs, to search and deliver.
type searchRun struct {
	b *searchBatch
	n int
}

// takeSearch takes the filling search batch, with next (free) as the new
// filling one, and retires the pending unlinks against the batches taken
// before it. The caller holds the role; the search itself (finishSearch)
// needs no role.
func (s *shard) takeSearch(next *searchBatch) searchRun {
	s.full.Store(false)
	s.stalled.Store(false)
	pending := s.takePending()
	until := s.untilList()
	if len(pending) > 0 {
		until = s.deliveredReaders(until)
	}
	b, n := s.takeBatchTo(next)
	s.retire(pending, until)
	return searchRun{b: b, n: n}
}

// finishSearch searches a taken batch, delivers its results and counts
// it, and returns the search call's time. Under SearchLaunchConcurrent it
// runs without the role, beside other batches' searches and the
// scheduler's steps.
func (s *shard) finishSearch(r searchRun) time.Duration {
	start := time.Now()
	err := r.b.space.Search(r.n)
	d := time.Since(start)
	r.b.deliver(err)
	s.lastCall.Store(int64(d))
	s.lat.add(d)
	s.sizes.add(time.Duration(r.n))
	s.prof.add(stIndexSearch, d)
	s.mu.Lock()
	s.stats.searchBatches++
	s.stats.searchJobs += uint64(r.n)
	s.stats.maxSearchBatch = max(s.stats.maxSearchBatch, uint64(r.n))
	if err != nil {
		s.stats.err = err
	}
	s.mu.Unlock()
	return d
}
