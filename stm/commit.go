package stm

import (
	"slices"
	"time"
)

// commit validates tx (an update transaction that wrote something) and, if
// it commits, writes its versions back. It returns whether tx committed and
// otherwise why not.
//
// The commit locks the items tx wrote in ascending order, each only if no
// version newer than tx's snapshot was installed (else a write-write
// conflict, or read-write when tx read the item) and no other commit holds
// it (then that commit is about to install a newer version: tx aborts
// rather than waits). It then takes its timestamp ts from the clock,
// validates that no item it read got a version newer than its snapshot
// (none needed when ts follows the snapshot), logs the versions it
// replaces, installs its own and frees the items. Commits of disjoint
// items share only the clock; a read waits only for a commit holding the
// item it reads. Cost: O(W log W + R) for W items written and R read, one
// atomic add on the clock, one on the version log and a compare-and-swap
// per item written, and 6 atomic stores per item written.
func (s *Store) commit(tx *Tx) (bool, Cause) {
	var t0 time.Time
	if tx.tm != nil {
		t0 = time.Now()
	}
	tx.order = tx.order[:0]
	for j, it := range tx.witems {
		tx.order = append(tx.order, uint64(it)<<32|uint64(j))
	}
	slices.Sort(tx.order)
	tx.wold = tx.wold[:0]
	for _, o := range tx.order {
		i := uint32(o >> 32)
		it := &s.items[i]
		w := it.word.Load()
		if w&locked != 0 || w > tx.snap || !it.word.CompareAndSwap(w, locked) {
			s.unlock(tx)
			return false, tx.causeOf(i)
		}
		tx.wold = append(tx.wold, w)
	}
	ts := s.clock.Add(1)
	var t1 time.Time
	if tx.tm != nil {
		t1 = time.Now()
		tx.tm.lock += t1.Sub(t0)
	}
	if ts != tx.snap+1 { // else no commit came between the snapshot and ts
		for _, i := range tx.reads {
			if !s.validRead(tx, i) {
				s.unlock(tx)
				return false, ReadWrite
			}
		}
	}
	var t2 time.Time
	if tx.tm != nil {
		t2 = time.Now()
		tx.tm.validate += t2.Sub(t1)
	}
	var pos uint64
	if tx.log != nil {
		pos = tx.log.reserve(uint64(len(tx.order)))
	}
	for n, o := range tx.order {
		pos++
		s.install(int(o>>32), ts, tx.wvals[uint32(o)], tx.wold[n], tx.log, tx.logNo, pos)
	}
	tx.ts = ts
	if tx.tm != nil {
		tx.tm.writeBack += time.Since(t2)
	}
	return true, 0
}

// validRead reports whether item i, read at snapshot snap by tx, which
// has taken its timestamp, has no version newer than snap: a commit that
// took an earlier timestamp locked i before it took it, so it has
// installed its version or still holds i (then tx aborts, as TL2 does).
// An item tx holds itself was checked when tx locked it.
func (s *Store) validRead(tx *Tx, i uint32) bool {
	w := s.items[i].word.Load()
	if w&locked != 0 {
		return tx.findWrite(i) >= 0
	}
	return w <= tx.snap
}

// unlock frees the items tx locked (the first len(tx.wold) of tx.order),
// restoring their words.
func (s *Store) unlock(tx *Tx) {
	for n, w := range tx.wold {
		s.items[tx.order[n]>>32].word.Store(w)
	}
	tx.wold = tx.wold[:0]
}

// causeOf names the conflict on item i, which tx wrote: read-write when
// tx also read it, else write-write (a blind write). Cost: O(reads).
func (tx *Tx) causeOf(i uint32) Cause {
	if slices.Contains(tx.reads, i) {
		return ReadWrite
	}
	return WriteWrite
}
