package par

import (
	"sync/atomic"
	"testing"
	"time"
)

// pools are the pools every Pool test runs against: one that spins, one
// that parks at once (every job wakes it), one of a single helper and the
// default.
func pools(t testing.TB) map[string]*Pool {
	ps := map[string]*Pool{
		"spin":    NewPool(3, time.Millisecond),
		"park":    NewPool(3, 0),
		"single":  NewPool(1, time.Millisecond),
		"default": NewPool(0, DefaultSpin),
	}
	t.Cleanup(func() {
		for _, p := range ps {
			p.Close()
		}
	})
	return ps
}

func TestPoolVisitsEveryItemOnce(t *testing.T) {
	for name, p := range pools(t) {
		for _, c := range []struct{ n, parts int }{{0, 3}, {1, 1}, {10, 3}, {1000, 7}, {1 << 16, 64}, {5, 0}, {3, 8}} {
			covers(t, name+"/Ranges", c.n, func(v func(lo, hi int)) { p.Ranges(c.n, c.parts, func(_, lo, hi int) { v(lo, hi) }) })
			pp := max(c.parts, 1)
			p.Ranges(c.n, c.parts, func(i, lo, hi int) {
				if lo != Bound(c.n, pp, i) || hi != Bound(c.n, pp, i+1) {
					t.Errorf("%s: n %d parts %d: part %d is [%d, %d)", name, c.n, pp, i, lo, hi)
				}
			})
		}
		for _, c := range []struct{ n, grain, workers int }{{0, 1, 4}, {7, 3, 1}, {1000, 7, 2}, {1 << 16, 64, 0}, {5, 0, -1}} {
			covers(t, name+"/For", c.n, func(v func(lo, hi int)) { p.For(c.n, c.grain, c.workers, v) })
		}
		for _, w := range []int{0, 1, 2, 17} {
			got := make([]int32, w)
			p.Do(w, func(i int) { atomic.AddInt32(&got[i], 1) })
			for i, c := range got {
				if c != 1 {
					t.Fatalf("%s: Do(%d): index %d ran %d times", name, w, i, c)
				}
			}
		}
	}
}

// TestPoolForKeepsItsWorkerLimit checks that For runs on at most its
// workers goroutines at once.
func TestPoolForKeepsItsWorkerLimit(t *testing.T) {
	p := NewPool(7, time.Millisecond)
	defer p.Close()
	for _, limit := range []int{1, 2, 3} {
		var now, most atomic.Int32
		p.For(64, 1, limit, func(lo, hi int) {
			c := now.Add(1)
			for m := most.Load(); c > m && !most.CompareAndSwap(m, c); m = most.Load() {
			}
			time.Sleep(100 * time.Microsecond)
			now.Add(-1)
		})
		if most.Load() > int32(limit) {
			t.Fatalf("For with %d workers ran %d parts at once", limit, most.Load())
		}
	}
}

// TestPoolNestedAndConcurrentCalls runs jobs from inside parts and from
// several goroutines at once: the calls that find the pool taken run on
// their own goroutines, so none waits for another.
func TestPoolNestedAndConcurrentCalls(t *testing.T) {
	for name, p := range pools(t) {
		const outer, inner = 8, 100
		var sum atomic.Int64
		done := make(chan struct{})
		for range 4 {
			go func() {
				p.Do(outer, func(int) {
					p.Ranges(inner, 5, func(_, lo, hi int) { sum.Add(int64(hi - lo)) })
				})
				done <- struct{}{}
			}()
		}
		for range 4 {
			<-done
		}
		if got := sum.Load(); got != 4*outer*inner {
			t.Fatalf("%s: nested calls counted %d items, want %d", name, got, 4*outer*inner)
		}
	}
}

// TestPoolWorkersPark checks that idle workers stop spinning: after the
// spin window both workers of a pool park, a job still runs every part
// (the workers are woken or the caller runs them), and Close returns.
func TestPoolWorkersPark(t *testing.T) {
	p := NewPool(2, 50*time.Microsecond)
	p.Do(4, func(int) {})
	for wait := time.Now().Add(time.Second); p.parked() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("%d of 2 workers parked a second after the spin window", p.parked())
		}
	}
	var n atomic.Int32
	p.Do(16, func(int) { n.Add(1) })
	if n.Load() != 16 {
		t.Fatalf("%d of 16 parts ran after parking", n.Load())
	}
	p.Close()
}

// TestPoolCloseBeforeWorkersStart closes pools right after starting them
// (and after jobs that the caller alone may have run): a worker that first
// runs after Close still stops.
func TestPoolCloseBeforeWorkersStart(t *testing.T) {
	for i := range 200 {
		p := NewPool(4, 0)
		if i%2 == 1 {
			p.Do(3, func(int) {})
		}
		p.Close()
	}
}

// BenchmarkPoolFanOut is BenchmarkRangesFanOut on the Shared pool: the
// latency of one fan-out of GOMAXPROCS parts of 4096 items each, back to
// back, after 100 µs idle (the workers still spinning) and after 1 ms
// idle (the workers parked: DefaultSpin is shorter); parts=N/inline is
// the same work on one goroutine, whose ns/part is the fan-out's floor.
func BenchmarkPoolFanOut(b *testing.B) {
	benchFanOut(b, Shared().Ranges, true, 0, 100*time.Microsecond, time.Millisecond)
}
