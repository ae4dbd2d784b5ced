package server

import "sync/atomic"

// Inline searches. On the CPU engine a search costs a fraction of a
// microsecond a key, far less than the hop to the shard's scheduler
// goroutine and back (a wake-up each way), so by default (Options.CPUSearch
// "inline") a Do searches the index on its own goroutine
// (hashindex.Index.SearchShared: concurrent searches under the index's
// read lock, excluded only from the scheduler's update calls, which may
// move cells). The rest of the pipeline is unchanged: the pending table is
// read first, and the search counts as a reader of the shard until the Do
// has acquired the items it located (release), as a batch's waiters do.
//
// The shard cannot list inline readers as it lists batches, so it counts
// them in two counters by the parity of an epoch. A reader adds itself to
// the counter of the current epoch and checks that the epoch did not move
// (else it tries again), so a scheduler that moves the epoch from E and
// then reads E's counter sees every reader that entered in E. A list of
// dropped locations taken while inline readers are in flight is unlinked
// once every reader of the epoch E current then is done: the scheduler
// moves the epoch to E+1 (once the readers of E-1 are gone, so that the
// two counters never mix three epochs) and waits for E's counter to drain.
// Readers that enter later search after the locations were dropped and
// cannot find them. The last reader of a counter wakes the scheduler when
// a list waits.

// CPU search modes (Options.CPUSearch).
const (
	CPUSearchInline  = "inline"
	CPUSearchBatched = "batched"
)

// inlineReaders counts a shard's inline searches whose callers may still
// hold a location they found, by epoch parity.
type inlineReaders struct {
	epoch atomic.Uint64
	_     [56]byte
	n     [2]paddedCount
}

type paddedCount struct {
	c atomic.Int64
	_ [56]byte
}

// tryEnter counts a reader in the current epoch's counter and returns it;
// ok is false when the epoch moved meanwhile: the caller then leaves that
// counter (shard.endInline: a scheduler may have seen the count) and tries
// again.
func (r *inlineReaders) tryEnter() (slot int, ok bool) {
	e := r.epoch.Load()
	slot = int(e & 1)
	r.n[slot].c.Add(1)
	return slot, r.epoch.Load() == e
}

// snapshot returns the current epoch and whether any reader is in flight.
// Scheduler only.
func (r *inlineReaders) snapshot() (epoch uint64, busy bool) {
	e := r.epoch.Load()
	return e, r.n[0].c.Load() != 0 || r.n[1].c.Load() != 0
}

// passed reports whether every reader that entered in epoch e or before
// is gone, moving the epoch past e when it can. Scheduler only (the only
// writer of the epoch).
func (r *inlineReaders) passed(e uint64) bool {
	cur := r.epoch.Load()
	if cur == e {
		if r.n[(e+1)&1].c.Load() != 0 {
			return false // readers of e-1 still hold the other counter
		}
		cur = e + 1
		r.epoch.Store(cur)
	}
	return cur > e+1 || r.n[e&1].c.Load() == 0
}

// searchInline searches hashes on the caller's goroutine and returns the
// ticket that keeps the caller a reader of the shard until its done.
// Cost: a few atomic operations on the shard's counters and the index's
// read lock, and the search itself.
func (s *shard) searchInline(hashes []uint64, out []uint32) (ticket, error) {
	slot, ok := s.inline.tryEnter()
	for !ok {
		s.endInline(slot)
		slot, ok = s.inline.tryEnter()
	}
	t := ticket{sh: s, off: slot, n: len(hashes)}
	start := s.prof.start()
	err := s.ix.SearchShared(hashes, out)
	s.prof.lap(stIndexSearch, &start)
	return t, err
}

// endInline ends an inline reader that entered with counter slot, waking
// the scheduler when it was the counter's last and a list of dropped
// locations waits.
func (s *shard) endInline(slot int) {
	if s.inline.n[slot].c.Add(-1) == 0 && s.awaitN.Load() > 0 {
		s.signal()
	}
}

// retire unlinks a list of dropped locations taken from the pending list
// once every search that may have located them is done with them: the
// batches of until and, on a shard with inline searches, the inline
// readers in flight now; at once when there are none. Scheduler only.
func (s *shard) retire(list []pendingUnlink, until []batchGen) {
	a := awaitUnlink{list: list, until: until}
	if s.inline != nil && len(list) > 0 {
		a.epoch, a.inline = s.inline.snapshot()
	}
	if len(list) == 0 || (len(until) == 0 && !a.inline) {
		s.unlinked(list)
		if cap(until) > 0 && len(s.untils) < 8 {
			s.untils = append(s.untils, until[:0])
		}
		return
	}
	s.awaiting = append(s.awaiting, a)
	s.awaitN.Store(int32(len(s.awaiting)))
}

// deliveredReaders appends to until the taken batches that still have
// readers: delivered ones, and (SearchLaunchConcurrent) those whose
// search is running, which may find a location dropped meanwhile.
func (s *shard) deliveredReaders(until []batchGen) []batchGen {
	for _, x := range s.q.batches {
		if x.state.Load()&batchClosed != 0 && x.readers.Load() > 0 {
			until = append(until, batchGen{x, x.gen})
		}
	}
	return until
}

// untilList returns a reused (empty) until list.
func (s *shard) untilList() []batchGen {
	if k := len(s.untils); k > 0 {
		u := s.untils[k-1]
		s.untils = s.untils[:k-1]
		return u
	}
	return nil
}
