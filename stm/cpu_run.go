package stm

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/engine"
)

// ticketChunk is how many tickets a CPU worker claims at once (and runs
// before it looks at the clock again in a run of a duration).
const ticketChunk = 64

// cpuEngine is the CPU engine of an Engine (its runner): a run is a fresh
// Store and one goroutine per worker.
type cpuEngine struct{ opt Options }

func (c *cpuEngine) close() error { return nil }

// workers is the number of goroutines of a run.
func (c *cpuEngine) workers() int {
	if c.opt.Workers > 0 {
		return c.opt.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// run runs a workload on a fresh CPU store with one goroutine per worker;
// each claims tickets and runs their transactions to commit.
func (c *cpuEngine) run(w Workload, sp *workloadSpec, ro RunOptions) (*Result, engine.Timings, error) {
	var tm engine.Timings
	if sp.body == nil {
		return nil, tm, fmt.Errorf("the workload has no CPU form (a CUDA body runs on the GPU only)")
	}
	var clk engine.Clock
	clk.Start()
	clk.Mark(nil, engine.MarkStart)
	s, err := NewStore(StoreOptions{Config: c.opt.Config, Items: w.Items(), Init: w.InitialValue,
		Record: ro.History, RecordAborted: ro.HistoryAborted, yield: c.opt.yield})
	if err != nil {
		return nil, tm, err
	}
	clk.Mark(nil, engine.MarkUploaded)
	clk.Mark(nil, engine.MarkSorted)
	threads := c.workers()
	var (
		tickets  atomic.Int64
		stop     atomic.Bool
		wrong    atomic.Uint64
		failed   error
		failOnce sync.Once
		wg       sync.WaitGroup
		times    = make([]phaseTimes, threads)
		lats     []Latency // each worker's commit latencies (RunOptions.Latency), merged at the end
	)
	if ro.Latency {
		lats = make([]Latency, threads)
	}
	start := time.Now()
	end := start.Add(ro.Duration)
	for th := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tmp *phaseTimes
			if ro.Breakdown {
				tmp = &times[th]
			}
			var lat *Latency
			if ro.Latency {
				lat = &lats[th]
			}
			for !stop.Load() {
				if ro.Transactions == 0 && time.Now().After(end) {
					return
				}
				first := tickets.Add(ticketChunk) - ticketChunk
				for t := first; t < first+ticketChunk; t++ {
					if ro.Transactions > 0 && t >= ro.Transactions {
						return
					}
					ticket := uint64(t)
					var bad bool
					fn := func(tx *Tx) error {
						bad = sp.body(tx, ro.Seed, ticket, th, threads)
						return nil
					}
					var t0 time.Time
					if ro.Latency {
						t0 = time.Now()
					}
					done, err := s.runTx(fn, sp.readOnly(ro.Seed, ticket, th, threads), &stop, tmp)
					if err != nil {
						failOnce.Do(func() { failed = err })
						stop.Store(true)
						return
					}
					if !done {
						return
					}
					if ro.Latency {
						lat.Record(time.Since(t0))
					}
					if bad {
						wrong.Add(1)
					}
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(ro.Timeout):
		stop.Store(true)
		<-finished
		failOnce.Do(func() { failed = fmt.Errorf("timed out after %v (%d commits)", ro.Timeout, s.Stats().Total()) })

	case <-ro.done():
		stop.Store(true)
		<-finished
		failOnce.Do(func() { failed = fmt.Errorf("stopped after %d commits: %w", s.Stats().Total(), context.Cause(ro.ctx)) })
	}
	elapsed := time.Since(start)
	clk.Mark(nil, engine.MarkWorked)
	res := &Result{Stats: s.Stats(), Wrong: wrong.Load(), Elapsed: elapsed, Threads: threads, Device: "cpu", Servers: s.Config().Servers}
	res.Final = s.Final()
	if ro.History {
		res.History = s.History()
	}
	for i := range lats {
		res.Latency.Merge(&lats[i])
	}
	for _, t := range times {
		res.Commit.Execute += t.execute
		res.Commit.WaitServer += t.lock
		res.Commit.Validate += t.validate
		res.Commit.WriteBack += t.writeBack
	}
	clk.Mark(nil, engine.MarkDone)
	tm = clk.Timings(w.Name(), int(res.Total()))
	return res, tm, failed
}
