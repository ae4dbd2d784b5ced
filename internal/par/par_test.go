package par

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// covers runs a splitting function over [0, n) and checks that every item
// is visited exactly once.
func covers(t *testing.T, name string, n int, run func(visit func(lo, hi int))) {
	t.Helper()
	seen := make([]int32, n)
	run(func(lo, hi int) {
		if lo < 0 || hi > n || lo > hi {
			t.Errorf("%s: range [%d, %d) outside [0, %d)", name, lo, hi, n)
			return
		}
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&seen[i], 1)
		}
	})
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("%s: item %d of %d visited %d times", name, i, n, c)
		}
	}
}

func TestForVisitsEveryItemOnce(t *testing.T) {
	for _, c := range []struct{ n, grain, workers int }{
		{0, 1, 4}, {1, 1, 4}, {7, 3, 1}, {1000, 7, 4}, {1000, 1000, 8}, {1 << 16, 64, 0}, {5, 0, -1},
	} {
		covers(t, "For", c.n, func(v func(lo, hi int)) { For(c.n, c.grain, c.workers, v) })
	}
}

func TestForChunksAreGrainSized(t *testing.T) {
	var mu sync.Mutex
	sizes := map[int]int{}
	For(100, 8, 4, func(lo, hi int) {
		mu.Lock()
		sizes[hi-lo]++
		mu.Unlock()
	})
	if sizes[8] != 12 || sizes[4] != 1 || len(sizes) != 2 {
		t.Fatalf("chunk sizes %v: want 12 of 8 and one of 4", sizes)
	}
}

func TestRangesAreContiguousAndNearEqual(t *testing.T) {
	for _, c := range []struct{ n, parts int }{{0, 3}, {10, 1}, {10, 3}, {10, 10}, {3, 8}, {1 << 20, 7}, {9, 0}} {
		covers(t, "Ranges", c.n, func(v func(lo, hi int)) { Ranges(c.n, c.parts, func(_, lo, hi int) { v(lo, hi) }) })
		p := max(c.parts, 1)
		Ranges(c.n, c.parts, func(i, lo, hi int) {
			if lo != Bound(c.n, p, i) || hi != Bound(c.n, p, i+1) {
				t.Errorf("n %d parts %d: part %d is [%d, %d)", c.n, p, i, lo, hi)
			}
			if d := hi - lo; d < c.n/p || d > c.n/p+1 {
				t.Errorf("n %d parts %d: part %d has %d items", c.n, p, i, d)
			}
		})
	}
}

func TestDoRunsEachIndexOnce(t *testing.T) {
	for _, w := range []int{0, 1, 2, 17} {
		got := make([]int32, w)
		Do(w, func(i int) { atomic.AddInt32(&got[i], 1) })
		for i, c := range got {
			if c != 1 {
				t.Fatalf("Do(%d): index %d ran %d times", w, i, c)
			}
		}
	}
}

func TestPartsKeepsAMinimumPerPart(t *testing.T) {
	for _, c := range []struct{ n, minPer, workers, want int }{
		{0, 10, 4, 1}, {39, 10, 4, 3}, {1000, 10, 4, 4}, {5, 0, 8, 5}, {100, 1, 0, min(100, runtime.GOMAXPROCS(0))},
	} {
		if got := Parts(c.n, c.minPer, c.workers); got != c.want {
			t.Errorf("Parts(%d, %d, %d) = %d, want %d", c.n, c.minPer, c.workers, got, c.want)
		}
	}
}

func BenchmarkFor(b *testing.B) {
	data := make([]uint64, 1<<22)
	b.SetBytes(int64(8 * len(data)))
	for b.Loop() {
		For(len(data), 1<<16, 0, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				data[i] += uint64(i)
			}
		})
	}
}

// BenchmarkRangesFanOut times par.Ranges over GOMAXPROCS parts of a
// little work (4096 items of a few nanoseconds each, as the GPU engines'
// host packing of one query batch gives each part), back to back and
// after the process has been idle for 1 ms, as between the host phases of
// a GPU call, where the runtime's idle threads have gone to sleep and are
// woken one after another. ns/op is the latency of one fan-out.
func BenchmarkRangesFanOut(b *testing.B) {
	benchFanOut(b, Ranges, false, 0, time.Millisecond)
}

// benchFanOut times ranges over GOMAXPROCS parts of 4096 items each after
// each idle time (and, with inline, the same work on one goroutine as the
// floor: ns/part), reporting ns/fanout.
func benchFanOut(b *testing.B, ranges func(n, parts int, fn func(i, lo, hi int)), inline bool, idles ...time.Duration) {
	parts := runtime.GOMAXPROCS(0)
	data := make([]uint64, parts*4096)
	work := func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			data[i] = data[i]*3 + 1
		}
	}
	if inline {
		b.Run(fmt.Sprintf("parts=%d/inline", parts), func(b *testing.B) {
			for b.Loop() {
				work(0, 0, len(data))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(parts), "ns/part")
		})
	}
	for _, idle := range idles {
		b.Run(fmt.Sprintf("parts=%d/idle=%v", parts, idle), func(b *testing.B) {
			var spent time.Duration
			for b.Loop() {
				if idle > 0 {
					time.Sleep(idle)
				}
				t0 := time.Now()
				ranges(len(data), parts, work)
				spent += time.Since(t0)
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "ns/fanout")
		})
	}
}
