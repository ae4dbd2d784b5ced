package server

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/hashindex"
)

// Searches reach a shard through lock-free slots in the shard's batch
// buffers, which on a GPU are the pinned staging the index transfers from:
// a connection goroutine reserves a range of the filling batch and a
// waiter slot with one compare-and-swap, writes its hashes there itself,
// and sleeps on its own channel (one per Do, reused); the scheduler closes
// the batch, launches it straight from that memory, and sends one token to
// each waiter's channel. There is no lock, no copy of the hashes by the
// scheduler, no allocation per request or per batch, and one wake-up of
// the scheduler per batch (by the request that opens it) and of each
// connection per batch it waits on.

// searchSpace is the memory of one search batch and the call that runs
// it: a hashindex.Staging searched with SearchStaged, or a slot of a
// persistent GPU search (hashindex.PersistentSearch).
type searchSpace interface {
	Hashes() []uint64
	Out() []uint32
	Cap() int
	// Search runs the first n jobs, writing Out()[:n].
	Search(n int) error
	Free() error
}

// stagedSpace is a Staging searched with SearchStaged.
type stagedSpace struct {
	*hashindex.Staging
	ix *hashindex.Index
}

func (s stagedSpace) Search(n int) error { return s.ix.SearchStaged(s.Staging, n) }

// delayedSpace, in tests (Options.searchDelay), is a stagedSpace whose
// every search call takes at least delay, as a GPU's does.
type delayedSpace struct {
	stagedSpace
	delay time.Duration
}

func (s delayedSpace) Search(n int) error {
	for end := time.Now().Add(s.delay); time.Now().Before(end); {
	}
	return s.stagedSpace.Search(n)
}

// Reservation word of a batch: jobs reserved in the low 32 bits, waiters
// in the next 16, closed above.
const (
	batchClosed     = 1 << 62
	batchJobsMask   = 1<<32 - 1
	batchWaiterOne  = 1 << 32
	batchWaiterMask = 1<<16 - 1
	// maxWaiters is the most requests one batch takes.
	maxWaiters = 4096
)

// searchBatch is one batch of searches: a range of the shard's batch
// buffers that requests fill and the scheduler launches.
type searchBatch struct {
	space   searchSpace
	cap     int
	state   atomic.Uint64     // reserved jobs | waiters<<32 | batchClosed
	waiters []chan<- struct{} // each waiter's channel, by reservation order
	written atomic.Int64      // jobs whose hashes are written
	readers atomic.Int32      // requests not yet done with the batch (ticket.done)
	opened  atomic.Int64      // unix nanoseconds of the first reservation
	err     error             // set before the waiters are woken
	nwait   int               // waiters of a closed batch (the role's holder)
	gen     uint64            // resets so far (the role's holder)
	// delivered: the waiters were woken; written by the batch's
	// launcher, which under SearchLaunchConcurrent does not hold the role.
	delivered atomic.Bool
}

// reset prepares a delivered batch, whose readers are gone, for filling.
// It clears only the waiter slots the batch used (nwait), not all
// maxWaiters: the role's holder resets a batch before it launches the
// next one, and clearing 32 KB there cost about a microsecond a batch.
func (b *searchBatch) reset() {
	b.written.Store(0)
	b.opened.Store(0)
	b.err = nil
	b.gen++
	b.delivered.Store(false)
	clear(b.waiters[:b.nwait])
	b.nwait = 0
	b.state.Store(0) // last: opens the batch to requests
}

// searchQueue is a shard's set of search batches: one filling (cur), one
// maybe running, others being read by their waiters.
type searchQueue struct {
	cur     atomic.Pointer[searchBatch]
	batches []*searchBatch
	closed  atomic.Bool
}

// searchBatches is the number of batch buffers of a shard: one filling,
// one running, and room for the waiters of earlier ones to read.
const searchBatches = 4

// concurrentBatches is the number of batch buffers of a shard whose
// callers search at the same time (SearchLaunchConcurrent, in the slots of
// a persistent search; staged calls run one at a time and keep
// searchBatches): one filling, one running per event loop of a server of
// 8 threads, and room for the waiters of earlier ones to read.
const concurrentBatches = 12

// newSearchQueue makes n batches of spaces from newSpace.
func newSearchQueue(n int, newSpace func() (searchSpace, error)) (*searchQueue, error) {
	q := &searchQueue{}
	for range n {
		sp, err := newSpace()
		if err != nil {
			q.free()
			return nil, fmt.Errorf("search batch buffers: %w", err)
		}
		b := &searchBatch{space: sp, cap: sp.Cap(), waiters: make([]chan<- struct{}, maxWaiters)}
		b.reset()
		q.batches = append(q.batches, b)
	}
	q.cur.Store(q.batches[0])
	return q, nil
}

// free releases the batches' memory.
func (q *searchQueue) free() error {
	var first error
	for _, b := range q.batches {
		if err := b.space.Free(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// queued returns the jobs reserved in the filling batch and when it was
// opened (zero when empty).
func (q *searchQueue) queued() (int, time.Time) {
	b := q.cur.Load()
	n := int(b.state.Load() & batchJobsMask)
	if n == 0 {
		return 0, time.Time{}
	}
	opened := b.opened.Load()
	if opened == 0 { // the opener has not stored it yet
		return n, time.Now()
	}
	return n, time.Unix(0, opened)
}

// ticket is a posted search: n jobs at offset off of batch b of shard sh
// (at: where a multi-shard search keeps them). Its holder counts as a
// reader of the batch until done. An inline search's ticket has no batch;
// off is its reader counter (shard.searchInline).
type ticket struct {
	b      *searchBatch
	sh     *shard
	off, n int
	at     int
}

// maxPost returns the most jobs one post may carry: a quarter of a batch.
func (s *shard) maxPost() int { return max(1, s.q.batches[0].cap/4) }

// post reserves room for hashes (at most maxPost) in the filling batch and
// writes them there; wake receives one token when the batch's results are
// ready (it must have room for one token per post not yet collected).
// Cost: a compare-and-swap and a copy.
func (s *shard) post(hashes []uint64, wake chan<- struct{}) (ticket, error) {
	n := len(hashes)
	b, st, err := s.reserve(n)
	if err != nil {
		return ticket{}, err
	}
	off := int(st & batchJobsMask)
	b.waiters[(st>>32)&batchWaiterMask] = wake
	copy(b.space.Hashes()[off:], hashes)
	b.written.Add(int64(n))
	return ticket{b: b, sh: s, off: off, n: n}, nil
}

// collect copies the results of a ticket whose token has arrived to out.
func (t ticket) collect(out []uint32) error {
	b := t.b
	if b.err == nil {
		copy(out[:t.n], b.space.Out()[t.off:t.off+t.n])
	}
	return b.err
}

// done ends the holder's interest in the ticket's batch: it has acquired
// (or given up on) the items at the locations it found. Locations dropped
// before the batch delivered are unlinked only once every batch delivered
// before then is done with (shard.runSearches), so a reader never finds
// the item it located unlinked before it acquires it. A holder must call
// done before it waits for another search, so that batches are always
// freed.
func (t ticket) done() {
	if t.b == nil {
		t.sh.endInline(t.off)
		return
	}
	if t.b.readers.Add(-1) == 0 {
		t.sh.signal() // the scheduler may wait for a free batch or to unlink
	}
}

// search looks up hashes in the shard and writes their locations to out,
// waiting on wake (empty, with room for a token). When held is not nil and
// the search fits one post, its ticket is appended there for the caller to
// finish with done; otherwise (no held, or pieces of at most maxPost jobs
// searched one after another) each piece is done at once. Cost: per piece
// a compare-and-swap, a copy each way and the wait for its batch.
func (s *shard) search(hashes []uint64, out []uint32, wake chan struct{}, held *[]ticket) error {
	if s.inline != nil {
		t, err := s.searchInline(hashes, out)
		if held != nil {
			*held = append(*held, t)
		} else {
			t.done()
		}
		return err
	}
	piece := s.maxPost()
	for lo := 0; lo < len(hashes); lo += piece {
		hi := min(lo+piece, len(hashes))
		t, err := s.post(hashes[lo:hi], wake)
		if err != nil {
			return err
		}
		await(wake, []ticket{t})
		err = t.collect(out[lo:hi])
		if held != nil && len(hashes) <= piece {
			*held = append(*held, t)
		} else {
			t.done()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// reserve takes n job slots and a waiter slot of the filling batch and
// counts the caller as one of its readers; it returns the batch and the
// reservation word before its own. The request that opens a batch records
// the time and wakes the scheduler (unless callers launch: callers.go);
// one that finds the batch full asks the scheduler to launch it and waits
// for the next.
func (s *shard) reserve(n int) (*searchBatch, uint64, error) {
	for {
		if s.q.closed.Load() {
			return nil, 0, errClosed
		}
		b := s.q.cur.Load()
		st := b.state.Load()
		if st&batchClosed != 0 || int(st&batchJobsMask)+n > b.cap || (st>>32)&batchWaiterMask >= maxWaiters {
			if st&batchClosed == 0 {
				s.full.Store(true)
				s.signal()
			}
			runtime.Gosched()
			continue
		}
		if !b.state.CompareAndSwap(st, st+uint64(n)+batchWaiterOne) {
			continue
		}
		b.readers.Add(1)
		if st == 0 {
			b.opened.Store(time.Now().UnixNano())
			if !s.callers { // callers launch it, or stall and signal
				s.signal()
			}
		}
		return b, st, nil
	}
}

// takeBatchTo closes the filling batch and makes next, a free batch
// (freeBatch or freeNow), the filling batch, then waits until every
// reserved job of the closed one is written; it returns the closed batch
// and its job count.
func (s *shard) takeBatchTo(next *searchBatch) (*searchBatch, int) {
	b := s.q.cur.Load()
	s.q.cur.Store(next)
	st := b.state.Or(batchClosed)
	n := int(st & batchJobsMask)
	for b.written.Load() < int64(n) {
		runtime.Gosched()
	}
	b.nwait = int((st >> 32) & batchWaiterMask)
	return b, n
}

// freeBatch returns a batch other than cur that no request can still
// use: never filled, or delivered with all its waiters gone. It resets it
// for filling, waiting for one if there is none. Run by the holder of
// the shard's role (the scheduler, or a caller that launches), which alone
// closes and resets batches; the batch's launcher delivers it, under
// SearchLaunchConcurrent after giving the role back.
func (s *shard) freeBatch(cur *searchBatch) *searchBatch {
	for {
		if b := s.freeNow(cur); b != nil {
			return b
		}
		runtime.Gosched()
	}
}

// freeNow is freeBatch without the wait: nil when there is no free batch.
func (s *shard) freeNow(cur *searchBatch) *searchBatch {
	for _, b := range s.q.batches {
		if b == cur {
			continue
		}
		st := b.state.Load()
		if st == 0 {
			return b // never filled since its reset
		}
		if st&batchClosed != 0 && b.delivered.Load() && b.readers.Load() == 0 {
			b.reset()
			return b
		}
	}
	return nil
}

// deliver publishes a batch's results (or err) to its waiters: one token
// each.
func (b *searchBatch) deliver(err error) {
	b.err = err
	b.delivered.Store(true)
	for _, w := range b.waiters[:b.nwait] {
		w <- struct{}{}
	}
}
