package server

import (
	"iter"

	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/protocol"
)

// Split batches (protocol.SplitCache): an event loop whose round waits on
// a GPU search batch has nothing to do meanwhile, since every readable
// connection of the loop is in that round. A split runs Do as a
// coroutine (iter.Pull): Start runs the batch until its first search is
// posted and would wait, and hands the goroutine back to the loop, which
// reads, parses and starts its other group of connections; Finish resumes
// the first (its search has usually delivered by then, or runs next),
// then the loop renders and writes it and finishes the second. A switch
// between a loop and its coroutine costs about as much as a function
// call, with no trip through the Go scheduler.
//
// What a split Do holds while paused: a reader's place in its search
// batch (not yet delivered), items it acquired from the pending table and
// the engine's close lock for reading, never a key's write lock (the
// first search of a Do is made without them: doReads, or current's first
// try). A loop so holds at most one delivered batch while one of its Do
// calls waits for another batch to launch, and each shard has two more
// batch buffers than the loops that split (Options.splitLoops,
// searchBatches), so one is always free to launch into while at most
// SplitLoops loops split.

// SplitLoops returns how many event loops may each keep two split batches
// in flight: the batch buffers of a shard less two where searches are
// batched (GPU shards, the CPU engine with CPUSearch "batched"), 0 on the
// CPU engine's inline searches, whose Do never waits for a device.
func (e *Engine) SplitLoops() int {
	if e.InlineSearch() {
		return 0
	}
	return e.batches - 2
}

// NewSplit returns a split batch runner for one event loop's group of
// connections (protocol.SplitCache). Cost: a goroutine, kept until Close.
func (e *Engine) NewSplit() protocol.Split {
	s := &splitDo{e: e}
	s.begin()
	return s
}

// pauser is a split Do's pause before its first search wait, given the
// channel and the number of tokens it waits for.
type pauser func(wake chan struct{}, k int)

// splitDo runs one batch at a time as a coroutine paused at its first
// search wait.
type splitDo struct {
	e      *Engine
	b      *kv.Batch
	err    error
	paused bool          // the coroutine waits in pause for the next resume
	used   bool          // this batch has paused once (pause is one-shot)
	wake   chan struct{} // while paused: the tokens its search waits for
	k      int
	yield  func(struct{}) bool
	next   func() (struct{}, bool)
	stop   func()
}

// begin starts the coroutine, which runs a batch per resume to its end or
// to its pause.
func (s *splitDo) begin() {
	s.paused, s.used = false, false
	s.next, s.stop = iter.Pull(func(yield func(struct{}) bool) {
		s.yield = yield
		for {
			s.err = s.run()
			s.b = nil
			if !yield(struct{}{}) {
				return
			}
		}
	})
}

// run is Do with the pause, on the coroutine. It takes the close lock
// only if no Close waits for it: the loop's other split Do may hold it
// for reading while paused, and a reader blocked behind Close would wait
// for a loop that waits for it.
func (s *splitDo) run() error {
	s.used = false
	if !s.e.closeMu.TryRLock() {
		return errClosed
	}
	defer s.e.closeMu.RUnlock()
	return s.e.do(s.b, s.pause)
}

// pause hands the goroutine back to the loop, once per batch, until k
// tokens on wake are ready (Ready) or the loop finishes the batch anyway.
func (s *splitDo) pause(wake chan struct{}, k int) {
	if s.used {
		return
	}
	s.used, s.paused, s.wake, s.k = true, true, wake, k
	s.yield(struct{}{})
	s.paused, s.wake = false, nil
}

// resume runs the coroutine to its next pause or the end of its batch. A
// panic in Do reaches the caller; the coroutine is then gone and is
// started again for the next batch.
func (s *splitDo) resume() {
	ok := false
	defer func() {
		if !ok {
			s.stop()
			s.begin()
		}
	}()
	s.next()
	ok = true
}

// Start runs b's Do until its first search is posted and would wait for
// its batch, or to its end, and reports whether it ran to its end.
func (s *splitDo) Start(b *kv.Batch) bool {
	s.b = b
	s.resume()
	return !s.paused
}

// Finish runs the batch Start began to its end and returns Do's error.
func (s *splitDo) Finish() error {
	if s.paused {
		s.resume()
	}
	return s.err
}

// Ready reports whether Finish would not wait for a search: the batch
// is not paused, or its search's results have arrived. Cost: a channel
// length.
func (s *splitDo) Ready() bool { return !s.paused || len(s.wake) >= s.k }

// Close ends the coroutine (between batches).
func (s *splitDo) Close() { s.stop() }
