package server

import (
	"time"

	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/itemstore"
)

// updateList is a list of index updates: deletes of (delHashes[i],
// delLocs[i]) and inserts of (insHashes[i], insLocs[i]), in rounds. It
// holds the items of its jobs until they are applied: rmRefs[i] the item
// delete i removes (zero for an evicted item's entry), insRefs[i] the new
// item of insert i. A write run builds one per shard in its scratch and
// appends it to the shard's queued list; the scheduler applies the queued
// list and hands it, with the drops of its inserts (Job indexing insHashes)
// and the error of each round, to the engine's complete function.
type updateList struct {
	delHashes []uint64
	delLocs   []uint32
	rmRefs    []itemstore.Ref
	insHashes []uint64
	insLocs   []uint32
	insRefs   []itemstore.Ref
	// barrier: a delete of this list removes an item whose insert may be
	// queued before it (a pending insert), so its deletes must not run
	// before the inserts queued earlier.
	barrier bool
	// rounds ends the list's rounds: round k applies the deletes
	// [rounds[k-1].del, rounds[k].del) and then the inserts
	// [rounds[k-1].ins, rounds[k].ins); the last round runs to the end.
	rounds []roundEnd
	drops  []hashindex.Dropped
	// errs holds each round's error (nil entries included) once applied;
	// errAt reads it.
	errs []error
	// unlinks is completeUpdate's scratch: the locations it hands the
	// shard to unlink, queued at once.
	unlinks []pendingUnlink
}

// anyHash returns a key hash of one of u's jobs, which names u's
// shard; u has at least one job.
func (u *updateList) anyHash() uint64 {
	if len(u.insHashes) > 0 {
		return u.insHashes[0]
	}
	return u.delHashes[0]
}

// roundEnd is where a round of an updateList ends.
type roundEnd struct{ del, ins int }

func (u *updateList) jobs() int { return len(u.delHashes) + len(u.insHashes) }

// reset empties u, keeping its memory.
func (u *updateList) reset() {
	clear(u.rmRefs)
	clear(u.insRefs)
	clear(u.errs)
	u.delHashes, u.delLocs, u.rmRefs = u.delHashes[:0], u.delLocs[:0], u.rmRefs[:0]
	u.insHashes, u.insLocs, u.insRefs = u.insHashes[:0], u.insLocs[:0], u.insRefs[:0]
	u.rounds, u.drops, u.errs, u.barrier = u.rounds[:0], u.drops[:0], u.errs[:0], false
}

// appendList appends the jobs of v to u. When v has a barrier and u has
// inserts in its current round, v's jobs start a new round.
func (u *updateList) appendList(v *updateList) {
	if v.barrier {
		lastIns := 0
		if k := len(u.rounds); k > 0 {
			lastIns = u.rounds[k-1].ins
		}
		if len(u.insHashes) > lastIns {
			u.rounds = append(u.rounds, roundEnd{len(u.delHashes), len(u.insHashes)})
		}
	}
	u.delHashes = append(u.delHashes, v.delHashes...)
	u.delLocs = append(u.delLocs, v.delLocs...)
	u.rmRefs = append(u.rmRefs, v.rmRefs...)
	u.insHashes = append(u.insHashes, v.insHashes...)
	u.insLocs = append(u.insLocs, v.insLocs...)
	u.insRefs = append(u.insRefs, v.insRefs...)
}

// roundOf returns the round of delete (del true) or insert job j.
func (u *updateList) roundOf(j int, del bool) int {
	for k, r := range u.rounds {
		if (del && j < r.del) || (!del && j < r.ins) {
			return k
		}
	}
	return len(u.rounds)
}

// errAt returns the error of the round of delete or insert job j.
func (u *updateList) errAt(j int, del bool) error {
	if len(u.errs) == 0 {
		return nil
	}
	return u.errs[u.roundOf(j, del)]
}

// update appends the jobs of v to the shard's queued updates; the shard's
// complete function gets them once applied (at once, with an error, when
// the shard is closed). Cost: the shard's lock and a copy of the jobs.
func (s *shard) update(v *updateList) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		v.errs = append(v.errs[:0], errClosed)
		v.rounds = v.rounds[:0]
		s.complete(v)
		return
	}
	if s.upd.jobs() == 0 {
		s.updSince = time.Now()
		s.updDue.Store(max(s.pol.updateAt(s.updSince).UnixNano(), s.updSince.Add(inlineUpdateLate).UnixNano()))
	}
	s.upd.appendList(v)
	s.mu.Unlock()
	s.signal()
}

// runUpdates applies the queued updates round by round (the caller holds
// the role: the scheduler, or a caller applying overdue updates): each round's
// deletes, then its inserts, in one call (hashindex.UpdateStaged). Deletes
// go first: a
// delete queued with or before an insert of the same location (an evicted
// item's cell and the new item that reuses its chunk) must not remove the
// new entry. A list whose delete removes an item whose insert may be queued
// before it started a new round (appendList), so that insert is applied
// first. The list then goes to complete. It returns the number of rounds.
func (s *shard) runUpdates() int {
	s.mu.Lock()
	u := s.upd
	s.upd, s.updSpare = s.updSpare, nil
	s.updDue.Store(0)
	s.applying = true
	s.mu.Unlock()
	start := time.Now()
	lo := roundEnd{}
	u.errs = u.errs[:0]
	for k := 0; k <= len(u.rounds); k++ {
		hi := roundEnd{len(u.delHashes), len(u.insHashes)}
		if k < len(u.rounds) {
			hi = u.rounds[k]
		}
		u.errs = append(u.errs, s.runRound(u, lo, hi))
		lo = hi
	}
	d := time.Since(start)
	s.pol.updated(d)
	s.prof.add(stIndexUpdate, d)
	t := s.prof.start()
	s.complete(u)
	s.prof.lap(stComplete, &t)
	rounds := len(u.errs)
	u.reset()
	s.mu.Lock()
	s.updSpare = u
	s.applying = false
	s.mu.Unlock()
	return rounds
}

// runRound applies the deletes [lo.del, hi.del) and then the inserts
// [lo.ins, hi.ins) of u, appending the inserts' drops to u.drops.
func (s *shard) runRound(u *updateList, lo, hi roundEnd) error {
	nDel, nIns := hi.del-lo.del, hi.ins-lo.ins
	st, err := s.staging(nDel + nIns)
	start := time.Now()
	first := len(u.drops)
	if err == nil {
		// One call: the deletes as jobs [0, nDel), the inserts after them
		// (on a GPU one kernel launch for a round of up to
		// hashindex.SmallUpdateMax jobs).
		copy(st.Hashes(), u.delHashes[lo.del:hi.del])
		copy(st.Locs(), u.delLocs[lo.del:hi.del])
		copy(st.Hashes()[nDel:], u.insHashes[lo.ins:hi.ins])
		copy(st.Locs()[nDel:], u.insLocs[lo.ins:hi.ins])
		u.drops, err = s.ix.UpdateStaged(st, nDel, nIns, u.drops)
	}
	s.updLat.add(time.Since(start))
	var over, disp uint64
	for i := first; i < len(u.drops); i++ {
		u.drops[i].Job += lo.ins
		if u.drops[i].Reason == hashindex.Overwritten {
			over++
		} else {
			disp++
		}
	}
	s.mu.Lock()
	s.stats.updateRounds++
	if nDel > 0 {
		s.stats.updateBatches++
	}
	if nIns > 0 {
		s.stats.updateBatches++
	}
	s.stats.updateJobs += uint64(nDel + nIns)
	s.stats.overwrites += over
	s.stats.displaced += disp
	if err != nil {
		s.stats.err = err
	}
	s.mu.Unlock()
	return err
}
