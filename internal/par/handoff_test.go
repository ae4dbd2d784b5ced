package par

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkPoolHandoff measures what parked workers cost the rest of the
// process: after a fan-out and an idle gap (the workers spinning, or
// parked in Go's scheduler or in the kernel), the caller wakes a goroutine
// blocked on a channel (as a GPU call starts the goroutine that queues its
// chunks beside the packing) and stays busy; the metric is how long the
// goroutine waited to run (its median, 90th percentile and worst of the
// runs). Workers parked in Go's scheduler leave their Ps idle, so any
// wake-up finds one; workers parked in the kernel hold their Ps in a
// system call until the runtime's monitor takes them back.
func BenchmarkPoolHandoff(b *testing.B) {
	kinds := []struct {
		name string
		park parking
	}{{"go-park", parkGo}, {"kernel-park", parkKernel}, {"kernel-park-one-go", parkKernelOneGo}}
	parts := runtime.GOMAXPROCS(0)
	data := make([]uint64, parts*4096)
	for _, k := range kinds {
		for _, gap := range []time.Duration{100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 30 * time.Millisecond} {
			b.Run(fmt.Sprintf("%s/gap=%v", k.name, gap), func(b *testing.B) {
				p := newPool(0, DefaultSpin, k.park)
				defer p.Close()
				wake := make(chan time.Time)
				var ran atomic.Int64 // ns the goroutine waited, +1 (0: not yet)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for t0 := range wake {
						ran.Store(time.Since(t0).Nanoseconds() + 1)
					}
				}()
				var waits []float64
				for b.Loop() {
					p.Ranges(len(data), parts, func(_, lo, hi int) {
						for i := lo; i < hi; i++ {
							data[i] = data[i]*3 + 1
						}
					})
					time.Sleep(gap)
					ran.Store(0)
					wake <- time.Now() // the goroutine is parked in the receive: this readies it
					for deadline := time.Now().Add(50 * time.Millisecond); ran.Load() == 0 && time.Now().Before(deadline); {
					}
					for ran.Load() == 0 { // past the deadline: let it run here
						runtime.Gosched()
					}
					waits = append(waits, float64(ran.Load()-1)/1e3)
				}
				close(wake)
				<-done
				slices.Sort(waits)
				b.ReportMetric(waits[len(waits)/2], "wait-us")
				b.ReportMetric(waits[len(waits)*9/10], "p90-wait-us")
				b.ReportMetric(waits[len(waits)-1], "max-wait-us")
			})
		}
	}
}
