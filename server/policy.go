package server

import (
	"sync/atomic"
	"time"
)

// The batch policy decides when a shard's scheduler launches the filling
// search batch and the queued updates.
//
// Fixed (Mega-KV's periodic scheduling): searches at most every interval
// C, updates at most every 2C.
//
// Load (the default): the interval follows the load. With F the recent
// duration of a search call and λ the recent arrival rate of search jobs,
// the batch that builds up during one call holds λF jobs; a batch launches
// once it holds that many, or once its first job has waited min(F, C). At
// low load (λF < 1) a job is launched at once; at high load calls run back
// to back, each taking what arrived during the previous one; in between a
// batch waits at most one call time for company. C stays the bound on any
// job's wait for its batch to launch. Updates, which no reply waits for
// (the pending table answers for them), are applied every max(2C,
// updateShare*U, 100 µs), with U the recent duration of an update round,
// so that they take at most about a tenth of the index's time (searches
// wait while a round runs), and at least every maxUpdateInterval; sooner
// when a queue is full or a write waits for room in the pending table.

// minUpdateInterval and maxUpdateInterval bound how long an update waits
// for its round under the load policy: at least long enough that a round
// carries many writes (a round costs the scheduler a call per kind), at
// most what bounds how long writes stay in the pending table and their
// items stay held.
const (
	minUpdateInterval = 100 * time.Microsecond
	maxUpdateInterval = time.Millisecond
)

// updateShare is the load policy's update interval in update-round
// durations. A GPU shard's update round (a delete and an insert call, each
// copies, a grouping, the kernel and a synchronization) took 82 µs on an
// H200 host, and searches wait for it: at 4 rounds' time the updates held
// the index a quarter of the time, and updating every 1 ms instead served
// 1.12x the requests at 64 connections with one request in flight, 95:5
// (2026-11-28). 10 keeps them to a tenth. A round is now one UpdateStaged
// call (one kernel launch up to 1024 jobs): 13-18 µs at p50 for rounds of
// 1 to 64 jobs, 30 µs for 256 (BenchmarkUpdateRound, H200, 2026-11-28),
// so the interval shrinks with it toward its 100 µs floor.
const updateShare = 10

// ewmaShift weighs a new sample by 1/8 in the policy's moving averages.
const ewmaShift = 3

// policy is a shard's batch policy and its measurements. The scheduler
// updates it; stats read it concurrently.
type policy struct {
	fixed    bool
	interval time.Duration // C
	lastRun  time.Time     // the previous search launch (scheduler only)

	callNs   atomic.Int64 // F: moving average of search call durations
	rate     atomic.Int64 // λ: moving average of search jobs per millisecond
	updateNs atomic.Int64 // U: moving average of update round durations
}

// searchAt returns when a filling batch of n jobs, opened at opened, is
// due.
func (p *policy) searchAt(n int, opened time.Time) time.Time {
	if p.fixed {
		return p.lastRun.Add(p.interval)
	}
	if n >= p.target() {
		return opened
	}
	return opened.Add(min(time.Duration(p.callNs.Load()), p.interval))
}

// target returns λF, the jobs that arrive during one search call, at
// least 1.
func (p *policy) target() int {
	return max(1, int(p.rate.Load()*p.callNs.Load()/int64(time.Millisecond)))
}

// updateAt returns when updates queued since since are due.
func (p *policy) updateAt(since time.Time) time.Time {
	if p.fixed {
		return since.Add(2 * p.interval)
	}
	return since.Add(p.updateInterval())
}

// updateInterval is the load policy's update interval.
func (p *policy) updateInterval() time.Duration {
	return min(max(2*p.interval, updateShare*time.Duration(p.updateNs.Load()), minUpdateInterval), maxUpdateInterval)
}

// searched records a search batch of n jobs launched at now whose call
// took d.
func (p *policy) searched(now time.Time, n int, d time.Duration) {
	if !p.lastRun.IsZero() {
		if gap := now.Sub(p.lastRun); gap > 0 {
			ewma(&p.rate, int64(n)*int64(time.Millisecond)/int64(gap))
		}
	}
	p.lastRun = now
	ewma(&p.callNs, int64(d))
}

// updated records an update round that took d.
func (p *policy) updated(d time.Duration) { ewma(&p.updateNs, int64(d)) }

// ewma moves a toward v by 1/2^ewmaShift (only the scheduler writes).
func ewma(a *atomic.Int64, v int64) {
	old := a.Load()
	if old == 0 {
		a.Store(v)
		return
	}
	a.Store(old + (v-old)>>ewmaShift)
}
