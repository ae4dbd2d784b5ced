package stm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// partition is one commit server: its log, the lock that makes a goroutine
// the server, and the queue of commit requests waiting for it.
type partition struct {
	server sync.Mutex // held by the goroutine serving this partition
	log    commitLog  // guarded by server

	qmu   sync.Mutex
	queue []*request // guarded by qmu
	spare []*request // guarded by server: the previous batch's slice

	batch []*request       // guarded by server: the batch being served
	seen  map[uint32]uint8 // guarded by server: items written in the batch so far
	_     [64]byte
}

func newPartition(entries, pool int) *partition {
	return &partition{log: newCommitLog(entries, pool), seen: map[uint32]uint8{}}
}

// request is one transaction's commit request at one server.
type request struct {
	tx     *Tx
	reads  []uint32 // items of this partition read
	writes []uint32 // items of this partition written
	ts     uint64   // commit timestamp when committed
	ok     bool
	cause  Cause
	done   atomic.Bool
}

// commit validates tx (an update transaction that wrote something) and, if
// it commits, writes its versions back and waits until they are visible.
// It returns whether tx committed and otherwise why not.
func (s *Store) commit(tx *Tx) (bool, Cause) {
	parts := tx.partitions()
	var ts uint64
	var t0 time.Time
	if tx.tm != nil {
		t0 = time.Now()
	}
	if popcount(parts) == 1 {
		p := 0
		for parts&(1<<p) == 0 {
			p++
		}
		r := &tx.req[0]
		*r = request{tx: tx, reads: tx.reads, writes: tx.witems}
		s.combine(s.parts[p], r)
		if !r.ok {
			return false, r.cause
		}
		ts = r.ts
	} else {
		ok, cause, t := s.commitMulti(tx, parts)
		if !ok {
			return false, cause
		}
		ts = t
	}
	var t1 time.Time
	if tx.tm != nil {
		t1 = time.Now()
		tx.tm.wait += t1.Sub(t0)
	}
	for j, it := range tx.witems {
		s.install(int(it), ts, tx.wvals[j])
	}
	tx.ts = ts
	s.pub[ts%pubRing].Store(ts)
	var t2 time.Time
	if tx.tm != nil {
		t2 = time.Now()
		tx.tm.writeBack += t2.Sub(t1)
	}
	s.awaitVisible(ts)
	if tx.tm != nil {
		tx.tm.publish += time.Since(t2)
	}
	return true, 0
}

// combine queues r at partition p and waits for its answer; while waiting,
// whenever p's server is idle the goroutine becomes the server and serves
// the whole queue as one batch (flat combining).
func (s *Store) combine(p *partition, r *request) {
	p.qmu.Lock()
	p.queue = append(p.queue, r)
	p.qmu.Unlock()
	for spins := 0; !r.done.Load(); spins++ {
		if p.server.TryLock() {
			p.qmu.Lock()
			b := p.queue
			p.queue = p.spare[:0]
			p.qmu.Unlock()
			s.serve(p, b, r.tx.tm)
			p.spare = b[:0]
			p.server.Unlock()
			continue
		}
		pause(spins)
	}
}

// serve validates a batch of requests in queue order against p's log and
// against the requests of the batch accepted before them (CSMV's
// pre-validation), reserves consecutive timestamps for the survivors with
// one atomic add, logs them and answers every request. Caller holds
// p.server.
func (s *Store) serve(p *partition, b []*request, tm *phaseTimes) {
	var t0 time.Time
	if tm != nil {
		t0 = time.Now()
	}
	clear(p.seen)
	accepted := 0
	for _, r := range b {
		in := r.tx.membership(r.reads, r.writes)
		ok, cause := p.log.validate(r.tx.snap, &in)
		if ok && len(b) > 1 {
			ok, cause = batchCheck(p.seen, r)
		}
		r.ok, r.cause = ok, cause
		if ok {
			accepted++
			if len(b) > 1 {
				for _, it := range r.writes {
					p.seen[it] = 2
				}
			}
		}
	}
	var t1 time.Time
	if tm != nil {
		t1 = time.Now()
		tm.serve += t1.Sub(t0)
	}
	if accepted > 0 {
		ts := s.reserve(uint64(accepted))
		for _, r := range b {
			if r.ok {
				r.ts = ts
				if len(r.writes) > 0 {
					p.log.append(ts, r.writes)
				}
				ts++
			}
		}
	}
	if tm != nil {
		tm.insert += time.Since(t1)
	}
	for _, r := range b {
		r.done.Store(true)
	}
}

// batchCheck reports whether r conflicts with the writes of earlier
// accepted requests of its batch (seen).
func batchCheck(seen map[uint32]uint8, r *request) (bool, Cause) {
	if len(seen) == 0 {
		return true, 0
	}
	for _, it := range r.reads {
		if seen[it] != 0 {
			return false, ReadWrite
		}
	}
	for _, it := range r.writes {
		if seen[it] != 0 {
			return false, WriteWrite
		}
	}
	return true, 0
}

// commitMulti commits a transaction that touches several partitions: it
// takes their servers in ascending order (combiners only ever TryLock, so
// no cycle can form), validates against each log, reserves one timestamp
// and logs it at every partition it wrote.
func (s *Store) commitMulti(tx *Tx, parts uint64) (bool, Cause, uint64) {
	tx.splitByPartition(parts)
	held := 0
	defer func() {
		for i := 0; i < held; i++ {
			s.parts[tx.byPart[i].p].server.Unlock()
		}
	}()
	for i := range tx.byPart {
		bp := &tx.byPart[i]
		p := s.parts[bp.p]
		p.server.Lock()
		held++
		in := tx.membership(bp.reads, bp.writes)
		if ok, cause := p.log.validate(tx.snap, &in); !ok {
			return false, cause, 0
		}
	}
	ts := s.reserve(1)
	for i := range tx.byPart {
		if bp := &tx.byPart[i]; len(bp.writes) > 0 {
			s.parts[bp.p].log.append(ts, bp.writes)
		}
	}
	return true, 0, ts
}

// reserve assigns n consecutive commit timestamps and returns the first;
// it first waits until fewer than pubRing timestamps are in flight.
func (s *Store) reserve(n uint64) uint64 {
	for spins := 0; s.next.Load()+n-s.clock.Load() > pubRing; spins++ {
		s.help()
		pause(spins)
	}
	return s.next.Add(n) - n + 1
}

// awaitVisible returns once the clock has reached ts, advancing it past
// every transaction whose write-back has finished (any waiter helps).
func (s *Store) awaitVisible(ts uint64) {
	for spins := 0; ; spins++ {
		c := s.clock.Load()
		if c >= ts {
			return
		}
		if s.pub[(c+1)%pubRing].Load() == c+1 {
			s.clock.CompareAndSwap(c, c+1)
			spins = 0
			continue
		}
		pause(spins)
	}
}

// help advances the clock over finished write-backs without waiting.
func (s *Store) help() {
	for {
		c := s.clock.Load()
		if s.pub[(c+1)%pubRing].Load() != c+1 {
			return
		}
		s.clock.CompareAndSwap(c, c+1)
	}
}

// pause backs off a spinning goroutine: busy first, then yielding.
func pause(spins int) {
	if spins > 16 {
		runtime.Gosched()
	}
}
