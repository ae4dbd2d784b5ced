package server

// An unpipelined client (one request in flight per connection, as
// memcslap and most applications) gains nothing from the shard scheduler's
// batching on the CPU engine, and pays for it: each Do wakes the scheduler
// goroutine and sleeps until it answers, two goroutine switches (often
// across processors) per request. Measured with one connection on a 2-core
// machine, that handoff was the whole difference between warpkv's best
// round trip (p10 24-28 µs) and memcached's or the protocol layer's over
// kv.Model (17-22 µs). So on the CPU engine without a batch interval, a
// search finding its shard idle runs in the caller: the index serializes
// its calls itself (hashindex.Index holds its mutex across each call, so a
// search never overlaps an update), and a write acknowledged before the
// search is in the index already. When the shard has queued jobs, the
// search joins the scheduler's batch as before, which keeps batching
// where load makes it pay. A read that loses a race with a deferred
// unlink finds the item gone and searches again under the key's lock
// (lookupLocked), as a batched read that loses the same race does.

// searchInline runs the search of hashes into out in the caller when the
// engine is the CPU one with no batch interval and the shard has nothing
// queued, and reports whether it did. Cost: the shard's lock to look at
// its queues, then the index call.
func (e *Engine) searchInline(s *shard, hashes []uint64, out []uint32) (bool, error) {
	if e.backend != "cpu" || e.interval != 0 {
		return false, nil
	}
	s.mu.Lock()
	idle := s.nSearch == 0 && s.nUpdate == 0 && !s.closed
	s.mu.Unlock()
	if !idle {
		return false, nil
	}
	return true, s.ix.Search(hashes, out)
}
