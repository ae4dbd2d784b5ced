//go:build linux

package protocol

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// Two groups in flight (Config.RoundOverlap, SplitCache). Without it a
// loop's round reads every readable connection, runs their batch and
// writes the replies; requests that arrive while the batch waits for the
// device wait for the whole round and the next. With it the loop runs a
// stream of groups, each the connections queued when it starts: a group
// is read, parsed and started (Split.Start: the batch runs until it would
// wait behind a batch already on the device, or to its end); while it
// waits the loop polls its sockets again (epoll_wait without blocking)
// and starts the connections that became readable as a second group;
// then it finishes the older group (Split.Finish), renders and writes its
// replies, and goes on. A group whose batch ran to its end in Start is
// answered at once. A connection is in one group at a time: one in
// flight is not read or queued again until its replies are written
// (finish queues it then), so its requests still run, and its replies go
// out, in order, and it reads its own writes.

// flight is one group of a loop's connections in flight on a Split.
type flight struct {
	conns   []*conn
	on      bool   // started and not yet answered
	seq     uint64 // start order, to answer the older first
	started bool   // the batch was started (it had ops, and Start did not panic)
	ran     bool   // the batch ran without failing (so far)
}

// flying reports whether a group is in flight.
func (l *loop) flying() bool { return l.fl[0].on || l.fl[1].on }

// stream runs one step of a loop with two groups in flight: it answers
// the groups whose batches are ready, then starts the queued connections
// as a group if a slot is free, else (or with nothing queued) answers
// the older group in flight.
func (l *loop) stream() {
	for old := l.older(); old >= 0 && (!l.fl[old].started || l.split[old].Ready()); old = l.older() {
		l.endGroup(old)
	}
	free := -1
	for i := range l.fl {
		if !l.fl[i].on {
			free = i
			break
		}
	}
	if len(l.run) > 0 && free >= 0 {
		l.startGroup(free)
		return
	}
	if old := l.older(); old >= 0 {
		l.endGroup(old)
	}
}

// older returns the slot of the older group in flight, -1 if none.
func (l *loop) older() int {
	old := -1
	for i := range l.fl {
		if l.fl[i].on && (old < 0 || l.fl[i].seq < l.fl[old].seq) {
			old = i
		}
	}
	return old
}

// drain answers every group in flight, the older first.
func (l *loop) drain() {
	for old := l.older(); old >= 0; old = l.older() {
		l.endGroup(old)
	}
}

// startGroup takes the queued connections as group i: it reads and parses
// them (up to loopMaxOps; the rest stay queued, first in line) and starts
// their batch, answering it at once when it ran to its end.
func (l *loop) startGroup(i int) {
	l.now = time.Now().UnixNano()
	f := &l.fl[i]
	run := l.run
	bt := l.half(i)
	n := l.readParse(run, bt)
	f.conns = append(f.conns[:0], run[:n]...)
	rest := copy(run, run[n:])
	clear(run[rest:])
	l.run = run[:rest]
	for _, c := range l.run {
		c.ev.queued = true
	}
	for _, c := range f.conns {
		c.ev.flying = true
	}
	l.seq++
	f.on, f.seq, f.started, f.ran = true, l.seq, false, true
	done := true
	if len(bt.Ops) > 0 {
		l.hot.batches.Add(1)
		l.hot.ops.Add(uint64(len(bt.Ops)))
		done, f.started, f.ran = l.start(i, bt)
		l.stages.lap(StageCache, 0)
	}
	if done {
		l.endGroup(i)
	}
}

// endGroup finishes group i's batch, renders and writes its connections'
// replies, and frees the slot.
func (l *loop) endGroup(i int) {
	f := &l.fl[i]
	if f.started {
		f.ran = l.finishSplit(i)
		f.started = false
		l.stages.lap(StageCache, len(l.half(i).Ops))
	}
	for _, c := range f.conns {
		c.ev.flying = false
	}
	l.answer(f.conns, f.ran)
	clear(f.conns)
	f.conns = f.conns[:0]
	f.on = false
	bt := l.half(i)
	if cap(bt.Buf) > 4<<20 {
		bt.Buf = nil
	}
	bt.Reset()
}

// half returns group slot i's batch.
func (l *loop) half(i int) *kv.Batch {
	if i == 1 {
		return &l.batch2
	}
	return &l.batch
}

// start starts bt on split i. done: the batch ran to its end (Finish will
// not wait); started is false when Start panicked (the group's
// connections are then closed, as after a failed batch).
func (l *loop) start(i int, bt *kv.Batch) (done, started, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			l.batchPanic(p)
			done, started, ok = true, false, false
		}
	}()
	return l.split[i].Start(bt), true, true
}

// finishSplit finishes split i's batch; false: the cache failed (closed)
// or panicked.
func (l *loop) finishSplit(i int) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			l.batchPanic(p)
			ok = false
		}
	}()
	if err := l.split[i].Finish(); err != nil {
		l.s.log.Debug("protocol: cache batch failed", "err", err)
		return false
	}
	return true
}

// batchPanic counts and logs a panic in a cache batch.
func (l *loop) batchPanic(p any) {
	l.s.stats.panics.Add(1)
	l.s.log.Error("protocol: panic in a cache batch", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}
