package stm

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Atomically runs fn as one transaction: fn's reads see one consistent
// state, its writes become visible together, and a conflict with a
// concurrent transaction re-runs fn from the start with a fresh snapshot,
// as often as needed. If fn returns an error or panics, nothing it wrote
// becomes visible; the error is returned, the panic continues. fn must not
// keep tx, and its side effects outside the store happen once per attempt.
// A closure that writes nothing commits at its snapshot without validation.
// Cost: fn's reads and writes, plus a commit that locks the items written,
// takes a timestamp and validates the items read (see Store's commit); a
// commit allocates nothing once the store's pooled transaction buffers have
// grown to its sizes.
func (s *Store) Atomically(fn func(tx *Tx) error) error { return s.run(fn, false) }

// ReadOnly runs fn as a read-only transaction: it reads the snapshot of
// its start and commits without validation; it is re-run only when an item
// no longer keeps a version that old. Write panics in it.
func (s *Store) ReadOnly(fn func(tx *Tx) error) error { return s.run(fn, true) }

func (s *Store) run(fn func(tx *Tx) error, ro bool) error {
	_, err := s.runTx(fn, ro, nil, nil)
	return err
}

// runTx runs fn until it commits, it fails, or stop is set (then it returns
// false). tm, when not nil, accumulates the time of the phases.
func (s *Store) runTx(fn func(tx *Tx) error, ro bool, stop *atomic.Bool, tm *phaseTimes) (bool, error) {
	tx := s.txPool.Get().(*Tx)
	defer s.txPool.Put(tx)
	tx.tm = tm
	defer func() { tx.tm = nil }()
	for attempt := 0; ; attempt++ {
		if stop != nil && stop.Load() {
			return false, nil
		}
		tx.begin(ro)
		var t0 time.Time
		if tm != nil {
			t0 = time.Now()
		}
		aborted, cause, err := tx.attempt(fn)
		if tm != nil {
			tm.execute += time.Since(t0)
		}
		if err != nil {
			return false, err
		}
		if !aborted {
			if len(tx.witems) == 0 {
				tx.stats.roCommits.Add(1)
				if s.record {
					s.addRecord(tx.record(true, false, 0))
				}
				return true, nil
			}
			var ok bool
			if ok, cause = s.commit(tx); ok {
				tx.stats.commits.Add(1)
				if s.record {
					s.addRecord(tx.record(false, false, 0))
				}
				return true, nil
			}
		}
		tx.stats.aborts[cause].Add(1)
		if s.recordAborted {
			s.addRecord(tx.record(tx.ro, true, cause))
		}
		backoff(attempt)
	}
}

// attempt runs fn once. A transaction abort inside fn (a read of a version
// that is gone) is reported as aborted; any other panic propagates after the
// attempt's buffers are dropped.
func (tx *Tx) attempt(fn func(tx *Tx) error) (aborted bool, cause Cause, err error) {
	defer func() {
		if r := recover(); r != nil {
			if a, ok := r.(abortSignal); ok {
				aborted, cause = true, a.cause
				return
			}
			tx.begin(tx.ro) // leave nothing behind
			panic(r)
		}
	}()
	return false, 0, fn(tx)
}

// backoff lets the transactions a retry conflicts with finish first.
func backoff(attempt int) {
	for i := 0; i < min(attempt, 8); i++ {
		runtime.Gosched()
	}
}

// record copies the attempt into a history record.
func (tx *Tx) record(ro, aborted bool, cause Cause) Record {
	r := Record{Snapshot: tx.snap, ReadOnly: ro || len(tx.witems) == 0, Aborted: aborted, Cause: cause}
	r.TS = tx.snap
	if !r.ReadOnly && !aborted {
		r.TS = tx.ts
	}
	r.Reads = make([]Access, len(tx.reads))
	for j, it := range tx.reads {
		r.Reads[j] = Access{Item: it, Value: tx.rvals[j]}
	}
	if !r.ReadOnly {
		r.Writes = make([]Access, len(tx.witems))
		for j, it := range tx.witems {
			r.Writes[j] = Access{Item: it, Value: tx.wvals[j]}
		}
	}
	return r
}

// phaseTimes accumulates where a goroutine's transactions spent their time:
// running bodies, locking write sets (and taking timestamps), validating
// read sets, installing versions.
type phaseTimes struct {
	execute, lock, validate, writeBack time.Duration
}
