//go:build linux

package protocol

import (
	"fmt"
	"runtime/debug"

	"github.com/warpkv/warpkv/kv"
)

// Two halves of a group in flight (Config.RoundOverlap, SplitCache): the
// first half is read, parsed and started, and while its batch waits for
// the device the second half is read, parsed and started; then the first
// is finished, rendered and written, then the second. A connection is in
// one half of a round, so its requests still run, and its replies go
// out, in order; a connection whose half is in flight is not read again
// until its replies are written (finish queues it for the next round).

// pair runs a group as two halves in flight and returns how many of its
// connections it ran: all, unless a batch reached loopMaxOps.
func (l *loop) pair(cur []*conn) int {
	h := (len(cur) + 1) / 2
	a, b := cur[:h], cur[h:]
	na := l.startHalf(0, a)
	if na < len(a) {
		l.endHalf(0, a[:na])
		return na
	}
	nb := l.startHalf(1, b)
	l.endHalf(0, a)
	l.endHalf(1, b[:nb])
	return h + nb
}

// startHalf reads and parses half i's connections into its batch and
// starts it, and returns how many connections it parsed.
func (l *loop) startHalf(i int, cur []*conn) int {
	bt := l.half(i)
	parsed := l.readParse(cur, bt)
	l.started[i], l.ran[i] = false, true
	if len(bt.Ops) > 0 {
		l.hot.batches.Add(1)
		l.hot.ops.Add(uint64(len(bt.Ops)))
		l.started[i], l.ran[i] = l.start(i, bt)
		l.stages.lap(StageCache, 0)
	}
	return parsed
}

// endHalf finishes half i's batch, renders and writes its connections'
// replies.
func (l *loop) endHalf(i int, cur []*conn) {
	ok := l.ran[i]
	if l.started[i] {
		ok = l.finishSplit(i)
		l.started[i] = false
		l.stages.lap(StageCache, len(l.half(i).Ops))
	}
	l.answer(cur, ok)
}

// half returns half i's batch.
func (l *loop) half(i int) *kv.Batch {
	if i == 1 {
		return &l.batch2
	}
	return &l.batch
}

// start starts bt on split i: started is false when Start panicked (the
// half's connections are then closed, as after a failed batch).
func (l *loop) start(i int, bt *kv.Batch) (started, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			l.batchPanic(p)
			started, ok = false, false
		}
	}()
	l.split[i].Start(bt)
	return true, true
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
