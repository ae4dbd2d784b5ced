package server

import (
	"runtime"
	"sync"
	"time"

	"warpkv/hashindex"
	"warpkv/itemstore"
)

// A shard is one hash index (one GPU, or the CPU engine) and the scheduler
// goroutine that feeds it batches. Connection goroutines queue index jobs
// with search and update; the scheduler launches every queued search as one
// batch at most every interval and every queued delete and insert as one
// update batch at most every 2*interval (Mega-KV's periodic scheduling), or
// at once when a queue reaches maxBatch jobs. One goroutine calls the
// index, so a search never runs while an update moves cells: a key that is
// present is always found.
type shard struct {
	ix       *hashindex.Index
	interval time.Duration
	maxBatch int
	lat      *latencyHist // search batch call latencies
	updLat   *latencyHist // update round call latencies

	mu       sync.Mutex
	searches []*searchReq
	nSearch  int
	updates  []*updateReq
	nUpdate  int
	closed   bool
	pending  []pendingUnlink // items to unlink after the next search batch
	unlink   func([]pendingUnlink)
	complete func(*updateReq) // called by the scheduler with each applied update
	wake     chan struct{}    // capacity 1: jobs arrived
	done     chan struct{}    // closed when the loop exits

	// scheduler-owned: the batch staging (pinned memory on a GPU, so
	// batches go to the device without a copy on the host) and scratch
	st    *hashindex.Staging
	drops []hashindex.Dropped
	stats shardStats
}

// shardStats counts the batches a shard launched (read under shard.mu).
type shardStats struct {
	searchBatches, searchJobs uint64
	updateBatches, updateJobs uint64
	overwrites, displaced     uint64
	maxSearchBatch            uint64
	err                       error // the last index error
}

// A waiter is signalled once per request it was given to; Do waits for all
// of its requests at once.
type waiter struct {
	wg sync.WaitGroup
}

// searchReq asks for the locations of hashes, written to out.
type searchReq struct {
	hashes []uint64
	out    []uint32
	err    error
	w      *waiter
}

// updateReq asks to delete (delHashes[i], delLocs[i]) and then insert
// (insHashes[i], insLocs[i]). It holds the items of its jobs until it is
// applied: rmRefs[i] the item delete job i removes (zero for an evicted
// item's entry), insRefs[i] the new item of insert job i. Once its shard
// has applied it, the scheduler writes the drops of its inserts (Job
// indexing insHashes) and err and hands it to the shard's complete
// function, which recycles it.
type updateReq struct {
	delHashes []uint64
	delLocs   []uint32
	rmRefs    []itemstore.Ref
	insHashes []uint64
	insLocs   []uint32
	insRefs   []itemstore.Ref
	// barrier: a delete job removes an item whose insert may still be
	// queued; the request's deletes must not run before earlier
	// requests' inserts (runUpdates starts a new round).
	barrier bool
	drops   []hashindex.Dropped
	err     error
}

func (r *updateReq) reset() {
	clear(r.rmRefs)
	clear(r.insRefs)
	r.delHashes, r.delLocs, r.rmRefs = r.delHashes[:0], r.delLocs[:0], r.rmRefs[:0]
	r.insHashes, r.insLocs, r.insRefs = r.insHashes[:0], r.insLocs[:0], r.insRefs[:0]
	r.drops, r.err, r.barrier = r.drops[:0], nil, false
}

func (r *updateReq) jobs() int { return len(r.delHashes) + len(r.insHashes) }

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

// deferUnlink queues p for unlinking after the shard's next search batch
// has delivered its results: a read whose search found the location just
// before the update that dropped it can still acquire the old item (it
// overlaps the write, so the old value is a correct answer) instead of
// searching again under the key's lock.
func (s *shard) deferUnlink(p pendingUnlink) {
	s.mu.Lock()
	s.pending = append(s.pending, p)
	s.mu.Unlock()
	s.signal()
}

// takePending returns and clears the pending unlinks.
func (s *shard) takePending() []pendingUnlink {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending
	s.pending = nil
	return p
}

// shardHooks are what a shard's scheduler reports to and calls back into
// its engine.
type shardHooks struct {
	searchLat, updateLat *latencyHist
	unlink               func([]pendingUnlink)
	complete             func(*updateReq)
}

func newShard(ix *hashindex.Index, interval time.Duration, maxBatch int, h shardHooks) *shard {
	s := &shard{ix: ix, interval: interval, maxBatch: maxBatch, lat: h.searchLat, updLat: h.updateLat,
		unlink: h.unlink, complete: h.complete,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.loop()
	return s
}

// search queues r; r.w is signalled when r.out is written.
func (s *shard) search(r *searchReq) {
	if !s.enqueue(r.w, &r.err, func() {
		s.searches = append(s.searches, r)
		s.nSearch += len(r.hashes)
	}) {
		return
	}
	s.signal()
}

// update queues r; the shard's complete function gets it once its jobs
// are applied (at once, with an error, when the shard is closed).
func (s *shard) update(r *updateReq) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		r.err = errClosed
		s.complete(r)
		return
	}
	s.updates = append(s.updates, r)
	s.nUpdate += r.jobs()
	s.mu.Unlock()
	s.signal()
}

// enqueue counts a request on its waiter and runs add under the shard's
// lock, or, once the shard is closed, fails the request at once.
func (s *shard) enqueue(w *waiter, errp *error, add func()) bool {
	w.wg.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		*errp = errClosed
		w.wg.Done()
		return false
	}
	add()
	return true
}

func (s *shard) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// close stops the scheduler after it has served the queued requests.
func (s *shard) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
	<-s.done
}

// loop is the scheduler: it waits for jobs, then for the batch interval
// since the previous launch of that kind (or a full queue), and launches.
func (s *shard) loop() {
	defer close(s.done)
	defer func() {
		if s.st != nil {
			s.st.Free()
		}
	}()
	var lastSearch, lastUpdate time.Time
	for {
		s.mu.Lock()
		ns, nu, np, closed := s.nSearch, s.nUpdate, len(s.pending), s.closed
		s.mu.Unlock()
		if ns == 0 && nu == 0 {
			if np > 0 {
				// Idle: no search is coming to wait for.
				s.unlink(s.takePending())
				continue
			}
			if closed {
				return
			}
			<-s.wake
			continue
		}
		now := time.Now()
		searchDue := ns > 0 && (ns >= s.maxBatch || closed || now.Sub(lastSearch) >= s.interval)
		updateDue := nu > 0 && (nu >= s.maxBatch || closed || now.Sub(lastUpdate) >= 2*s.interval)
		if !searchDue && !updateDue {
			next := lastSearch.Add(s.interval)
			if ns == 0 || (nu > 0 && lastUpdate.Add(2*s.interval).Before(next)) {
				next = lastUpdate.Add(2 * s.interval)
			}
			s.sleepUntil(next)
			continue
		}
		if updateDue {
			lastUpdate = now
			s.runUpdates()
		}
		if searchDue {
			lastSearch = now
			s.runSearches()
		}
	}
}

// timerSlack is the shortest wait left to a timer: Go's timers may
// oversleep by about a millisecond when the process is idle, far more than
// a batch interval, so shorter waits spin (yielding the processor).
const timerSlack = 2 * time.Millisecond

// sleepUntil waits until t or until a queue fills up. Waits longer than
// timerSlack sleep on a timer until timerSlack before t; the rest spins
// with runtime.Gosched, which costs the scheduler's core only while jobs
// wait for their batch.
func (s *shard) sleepUntil(t time.Time) {
	if d := time.Until(t) - timerSlack; d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-s.wake:
			timer.Stop()
			if s.full() {
				return
			}
		}
	}
	for time.Now().Before(t) {
		select {
		case <-s.wake:
			if s.full() {
				return
			}
		default:
			runtime.Gosched()
		}
	}
}

// full reports whether a queue reached maxBatch or the shard is closing.
func (s *shard) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nSearch >= s.maxBatch || s.nUpdate >= s.maxBatch || s.closed
}

// staging returns the shard's staging with room for n jobs, growing it
// (with headroom) when a batch outgrows it.
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

// runSearches launches every queued search as one batch.
func (s *shard) runSearches() {
	s.mu.Lock()
	reqs := s.searches
	s.searches = nil
	s.nSearch = 0
	pending := s.pending // queued before this batch: unlinked after it
	s.pending = nil
	s.mu.Unlock()
	defer s.unlink(pending)
	total := 0
	for _, r := range reqs {
		total += len(r.hashes)
	}
	st, err := s.staging(total)
	if err == nil {
		off := 0
		for _, r := range reqs {
			off += copy(st.Hashes()[off:], r.hashes)
		}
		start := time.Now()
		err = s.ix.SearchStaged(st, total)
		s.lat.add(time.Since(start))
	}
	off := 0
	for _, r := range reqs {
		n := len(r.hashes)
		if err != nil {
			r.err = err
		} else {
			copy(r.out, st.Out()[off:off+n])
		}
		off += n
		r.w.wg.Done()
	}
	s.mu.Lock()
	s.stats.searchBatches++
	s.stats.searchJobs += uint64(total)
	s.stats.maxSearchBatch = max(s.stats.maxSearchBatch, uint64(total))
	if err != nil {
		s.stats.err = err
	}
	s.mu.Unlock()
	// Reuse the request list's memory for the next round.
	clear(reqs)
}

// runUpdates applies every queued update, in rounds: a round is a run of
// requests whose deletes go first as one batch, then their inserts as one
// batch. Deletes go first: a delete queued with or before an insert of the
// same location (an evicted item's cell and the new item that reuses its
// chunk) must not remove the new entry. A request whose delete removes an
// item whose insert may be queued before it (barrier) starts a new round
// after earlier inserts, so that the insert is applied first. Each
// request is then handed to complete.
func (s *shard) runUpdates() {
	s.mu.Lock()
	reqs := s.updates
	s.updates = nil
	s.nUpdate = 0
	s.mu.Unlock()
	for lo := 0; lo < len(reqs); {
		hi, ins := lo, false
		for ; hi < len(reqs); hi++ {
			if hi > lo && ins && reqs[hi].barrier {
				break
			}
			ins = ins || len(reqs[hi].insHashes) > 0
		}
		s.runRound(reqs[lo:hi])
		lo = hi
	}
	for _, r := range reqs {
		s.complete(r)
	}
	clear(reqs)
}

// runRound applies the deletes and then the inserts of reqs.
func (s *shard) runRound(reqs []*updateReq) {
	nDel, nIns := 0, 0
	for _, r := range reqs {
		nDel += len(r.delHashes)
		nIns += len(r.insHashes)
	}
	st, err := s.staging(max(nDel, nIns))
	start := time.Now()
	if err == nil && nDel > 0 {
		off := 0
		for _, r := range reqs {
			copy(st.Locs()[off:], r.delLocs)
			off += copy(st.Hashes()[off:], r.delHashes)
		}
		err = s.ix.DeleteStaged(st, nDel, nil)
	}
	drops := s.drops[:0]
	if err == nil && nIns > 0 {
		off := 0
		for _, r := range reqs {
			copy(st.Locs()[off:], r.insLocs)
			off += copy(st.Hashes()[off:], r.insHashes)
		}
		drops, err = s.ix.InsertStaged(st, nIns, drops)
	}
	s.updLat.add(time.Since(start))
	s.drops = drops
	// Hand each drop to its request (drops come in job order).
	var over, disp uint64
	r, first := 0, 0
	for _, d := range drops {
		for d.Job >= first+len(reqs[r].insHashes) {
			first += len(reqs[r].insHashes)
			r++
		}
		d.Job -= first
		reqs[r].drops = append(reqs[r].drops, d)
		if d.Reason == hashindex.Overwritten {
			over++
		} else {
			disp++
		}
	}
	for _, r := range reqs {
		r.err = err
	}
	s.mu.Lock()
	s.stats.updateBatches++
	s.stats.updateJobs += uint64(nDel + nIns)
	s.stats.overwrites += over
	s.stats.displaced += disp
	if err != nil {
		s.stats.err = err
	}
	s.mu.Unlock()
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n, max(n, 2*cap(b)))
	}
	return b[:n]
}
