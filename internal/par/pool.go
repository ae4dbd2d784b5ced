package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a set of persistent worker goroutines for fan-outs that must
// start in microseconds: the host copies of the GPU engines' pipelined
// calls, which fan out several times per chunk. Ranges, For and Do on the
// package functions start new goroutines each time, and waking the
// runtime's idle threads one after another costs tens of microseconds per
// fan-out; a Pool's workers instead spin for a while after each job
// (yielding their thread every yieldEvery) and only then park, so a job that
// follows within the spin window starts on every worker at once. Then
// they park in Go's scheduler, which wakes parked goroutines' threads one
// after another (each woken thread wakes the next): on a 16-core host a
// 4-20 MB job after the spin window ran on half of the workers at half
// the rate (BENCHMARKS.md, branch parw). Parked in the kernel instead (a
// futex, branch parw) they started all at once, but a goroutine readied
// just after they parked waited up to 4.7-8.8 ms for their Ps, and on the
// H200 CuART's insert ran 339-492 M keys/s against 478-490 parked in Go's
// scheduler (BENCHMARKS.md, parw and the final runs of 2026-11-29
// 15:50-16:03 UTC), so they park in Go's scheduler.
//
// A job's parts are taken dynamically by the caller and the workers, so
// parts must not wait on one another (no barriers or channels between
// them): any part may run on any worker, or all on the caller. A Pool
// runs one job at a time; a call made while another runs (from another
// goroutine, or from inside a part) runs on new goroutines as the package
// functions do, so calls never wait for each other. A panic in a part
// crashes the process, as in a goroutine.
type Pool struct {
	workers int           // helper goroutines (the caller is one more)
	spin    time.Duration // how long an idle worker spins before it parks

	busy sync.Mutex              // held by the caller of the running job
	gen  atomic.Uint64           // bumped for every job; workers watch it
	job  atomic.Pointer[poolJob] // the latest job
	stop atomic.Bool

	mu     sync.Mutex // guards parking
	wake   *sync.Cond
	slept  atomic.Int32 // workers parked on wake
	exited sync.WaitGroup
}

// poolJob is one fan-out: parts fn(0..parts-1), taken through next, at
// most limit workers (the caller included) joining it.
type poolJob struct {
	fn     func(i int)
	parts  int64
	limit  int32
	next   atomic.Int64
	done   atomic.Int64
	joined atomic.Int32
}

// DefaultSpin is how long an idle worker of the Shared pool spins before
// it parks: longer than the host's gaps between the fan-outs of one
// pipelined GPU call (a chunk's driver calls and event waits), short
// enough that an idle process gives its cores back within a millisecond.
const DefaultSpin = 200 * time.Microsecond

// NewPool starts workers helper goroutines (<= 0: GOMAXPROCS-1, at least
// one) that spin for spin after each job before parking in Go's
// scheduler. Close stops them. Cost: the goroutines; no CPU while parked.
func NewPool(workers int, spin time.Duration) *Pool {
	if workers <= 0 {
		workers = max(1, runtime.GOMAXPROCS(0)-1)
	}
	p := &Pool{workers: workers, spin: spin}
	p.wake = sync.NewCond(&p.mu)
	p.exited.Add(workers)
	for range workers {
		go p.work(0) // the generation now: a job or Close before the goroutine runs still wakes it
	}
	return p
}

// shared is the process's Pool behind Shared: the package's one piece of
// global state, started on first use and never stopped.
var shared struct {
	once sync.Once
	p    *Pool
}

// Shared returns the process's Pool of GOMAXPROCS-1 workers (at the first
// call) spinning DefaultSpin, starting it on first use. Cost: O(1) after
// the first call.
func Shared() *Pool {
	shared.once.Do(func() { shared.p = NewPool(0, DefaultSpin) })
	return shared.p
}

// Workers is the number of goroutines a job can run on: the helpers and
// the caller.
func (p *Pool) Workers() int { return p.workers + 1 }

// Close stops the workers once they are idle and waits for them; the
// Pool must not be used after. Cost: a wake-up of the parked workers.
func (p *Pool) Close() {
	p.stop.Store(true)
	p.gen.Add(1)
	p.wakeAll()
	p.exited.Wait()
}

// Do runs fn(0), ..., fn(parts-1) on the pool's workers and the caller,
// each part taken by whichever is free, and returns when all have run
// (inline for one part). Cost: the parts divided among the workers plus
// about a microsecond when the workers are spinning.
func (p *Pool) Do(parts int, fn func(i int)) { p.run(parts, p.workers+1, fn) }

// Ranges is the package's Ranges on the pool: [0, n) cut into parts
// near-equal contiguous parts, fn(i, lo, hi) for each. Cost: as Do.
func (p *Pool) Ranges(n, parts int, fn func(i, lo, hi int)) {
	parts = max(parts, 1)
	p.run(parts, p.workers+1, func(i int) { fn(i, Bound(n, parts, i), Bound(n, parts, i+1)) })
}

// For is the package's For on the pool: fn on the chunks of grain items of
// [0, n), taken dynamically by at most workers goroutines (<= 0: all of
// the pool's), the caller included. Cost: as Do.
func (p *Pool) For(n, grain, workers int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if workers <= 0 {
		workers = p.workers + 1
	}
	p.run(chunks, workers, func(c int) { fn(c*grain, min(n, (c+1)*grain)) })
}

// run runs parts parts of fn on at most limit goroutines.
func (p *Pool) run(parts, limit int, fn func(i int)) {
	if parts <= 1 || limit <= 1 {
		for i := range parts {
			fn(i)
		}
		return
	}
	if !p.busy.TryLock() {
		spawn(parts, limit, fn)
		return
	}
	defer p.busy.Unlock()
	j := &poolJob{fn: fn, parts: int64(parts), limit: int32(limit)}
	j.joined.Store(1) // the caller
	p.job.Store(j)
	p.gen.Add(1)
	p.wakeAll()
	j.help()
	var y yielder
	for j.done.Load() < j.parts {
		y.tick() // a worker holding a part may need this thread
	}
	p.job.Store(nil) // the pool keeps no reference to fn's data
}

// yieldEvery is how often a spinning goroutine (an idle worker, or a
// caller waiting for the last parts) yields its thread: rarely enough that
// the spinners do not contend for the scheduler's run queue, often enough
// that a goroutine readied on their thread waits microseconds, not the
// runtime's 10 ms preemption.
const yieldEvery = 20 * time.Microsecond

// yielder counts a spin loop's iterations and yields every yieldEvery.
type yielder struct {
	i    int
	last time.Time
}

// tick counts one iteration, reading the clock every 256, and reports
// the time when it read it (zero otherwise).
func (y *yielder) tick() time.Time {
	y.i++
	if y.i&255 != 0 {
		return time.Time{}
	}
	now := time.Now()
	if y.last.IsZero() {
		y.last = now
	} else if now.Sub(y.last) >= yieldEvery {
		runtime.Gosched()
		y.last = now
	}
	return now
}

// spawn runs parts parts of fn on at most limit new goroutines that take
// them dynamically: a Pool's call while its workers are taken.
func spawn(parts, limit int, fn func(i int)) {
	var next atomic.Int64
	Do(min(parts, limit), func(int) {
		for i := int(next.Add(1) - 1); i < parts; i = int(next.Add(1) - 1) {
			fn(i)
		}
	})
}

// help runs parts of j until none is left.
func (j *poolJob) help() {
	for {
		i := j.next.Add(1) - 1
		if i >= j.parts {
			return
		}
		j.fn(int(i))
		j.done.Add(1)
	}
}

// work is a worker: wait for a generation after seen, join its job if it
// has room, repeat until Close.
func (p *Pool) work(seen uint64) {
	defer p.exited.Done()
	for {
		seen = p.await(seen)
		if p.stop.Load() {
			return
		}
		j := p.job.Load()
		if j != nil && j.next.Load() < j.parts && j.joined.Add(1) <= j.limit {
			j.help()
		}
	}
}

// await returns the generation once it differs from seen: spinning for
// p.spin (yielding the thread every yieldEvery), then parked in Go's
// scheduler (wakeAll wakes it).
func (p *Pool) await(seen uint64) uint64 {
	deadline := time.Now().Add(p.spin)
	var y yielder
	for {
		if g := p.gen.Load(); g != seen {
			return g
		}
		if now := y.tick(); !now.IsZero() && now.After(deadline) {
			break
		}
	}
	p.slept.Add(1)
	defer p.slept.Add(-1)
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if g := p.gen.Load(); g != seen {
			return g
		}
		p.wake.Wait()
	}
}

// parked returns how many workers are parked.
func (p *Pool) parked() int { return int(p.slept.Load()) }

// wakeAll wakes the parked workers, after a new generation is published:
// a worker that counted itself parked after the generation's load sees
// the new one before it parks. Cost: nothing when none is parked.
func (p *Pool) wakeAll() {
	if p.slept.Load() > 0 {
		p.mu.Lock()
		p.wake.Broadcast()
		p.mu.Unlock()
	}
}
