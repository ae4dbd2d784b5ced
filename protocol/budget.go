package protocol

import (
	"runtime/debug"
	"time"
)

// DefaultMaxReplyBytes is the default Config.MaxReplyBytes.
const DefaultMaxReplyBytes = 16 << 20

// holdReplies adds n (negative: removes) to the bytes of replies the
// server holds for clients that have not read them yet. When the holdings
// fall back to zero after exceeding half of Config.MaxReplyBytes, the
// memory is handed back to the operating system (see giveBack). Cost: an
// atomic add.
func (s *Server) holdReplies(n int64) {
	v := s.held.Add(n)
	switch {
	case n > 0 && v > s.cfg.MaxReplyBytes/2:
		s.heldHigh.Store(true)
	case n < 0 && v == 0 && s.heldHigh.Load():
		if s.heldHigh.CompareAndSwap(true, false) {
			go s.giveBack()
		}
	}
}

// giveBackEvery is the least time between two hand-backs of free memory.
const giveBackEvery = 2 * time.Second

// giveBack returns the memory freed by replies that slow clients held
// (their copies, and the batches they were copied from) to the operating
// system, at most every giveBackEvery: the Go runtime would otherwise keep
// the pages for minutes. The event loops first drop their round buffers
// grown past loopKeepBytes by large values (trimLoops), which would
// otherwise stay live: up to 4 MB a loop, one loop per core. A call too soon after the last hand-back
// schedules one for when the interval has passed (once), so the memory of
// the last drain is returned too. Cost: a garbage collection.
func (s *Server) giveBack() {
	for {
		now := time.Now().UnixNano()
		last := s.gaveBack.Load()
		if wait := last + int64(giveBackEvery) - now; wait > 0 {
			if s.backLater.CompareAndSwap(false, true) {
				time.AfterFunc(time.Duration(wait), func() {
					s.backLater.Store(false)
					s.giveBack()
				})
			}
			return
		}
		if s.gaveBack.CompareAndSwap(last, now) {
			s.trimLoops()
			debug.FreeOSMemory()
			return
		}
	}
}

// noteHits records the mean value size of a round's gets (avg bytes per
// get) in the server's estimate, which bounds the gets of every
// connection's next rounds to about MaxBatchBytes of values (beginRound).
// The estimate rises at once to a larger size and decays by an eighth of
// the difference per round of smaller ones; sizes too small to limit a
// round (MaxBatch of them fit MaxBatchBytes) leave it at zero. Cost: an
// atomic load, and a compare-and-swap when it changes.
func (s *Server) noteHits(avg int) {
	small := int64(s.cfg.MaxBatchBytes / s.cfg.MaxBatch)
	a := int64(avg)
	est := s.hitEst.Load()
	var next int64
	switch {
	case a >= est:
		next = a
	default:
		next = est - (est-a)/8 - 1
	}
	if next <= small {
		next = 0
	}
	if next != est {
		s.hitEst.CompareAndSwap(est, next)
	}
}
