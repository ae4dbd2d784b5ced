package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Latency summarizes request latencies: from writing a request (into the
// connection's buffer, ahead of the pipeline's flush) to reading the end
// of its reply.
type Latency struct {
	P50, P95, P99, P999, Mean, Max time.Duration
}

// Result is what a load run measured in its timed window.
type Result struct {
	Addr     string
	Workload string
	// Ops counts operations (each key of a multi-get is one), Requests
	// the get and set requests that carried them.
	Ops, Requests             uint64
	Gets, Sets, Hits, Misses  uint64
	Errors                    uint64 // error replies, unstored sets, hits of the wrong size
	Elapsed                   time.Duration
	OpsPerSec                 float64
	HitRatio                  float64 // Hits / Gets
	Latency                   Latency
	Preload                   *PreloadResult `json:",omitempty"`
	Conns, Pipeline, MultiGet int
	Protocol                  Protocol
	// Rate is the pace asked for (ops/s; 0: as fast as possible).
	Rate float64 `json:",omitempty"`
	// ServerCPU is the CPU time the server process used in the measured
	// window (Config.ServerPID), and ServerCPUPerMop that per million
	// operations; LoadCPU is this generator's own CPU time in the window.
	ServerCPU, LoadCPU time.Duration
	ServerCPUPerMop    time.Duration
	// LoadBusy is LoadCPU over the window's length times GOMAXPROCS: near
	// 1, the generator rather than the server may be the bound.
	LoadBusy float64
	// ServerStats are the differences of the server's numeric statistics
	// over the window (Config.ServerStats).
	ServerStats map[string]float64 `json:",omitempty"`
	// Paced is the measurement at Config.RateFraction of this one's
	// throughput.
	Paced *Result `json:",omitempty"`
}

// Run preloads the server (unless cfg.NoPreload), then loads it as cfg
// says for cfg.Warmup and measures for cfg.Duration; with cfg.RateFraction
// it then measures again, paced at that fraction of the throughput found
// (Result.Paced). It returns what it measured, and an error if it could
// not connect or a connection failed (the Result then covers the
// connections that did not). Cost: the durations plus the preload; the
// generator allocates nothing per request.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	var pre *PreloadResult
	if !cfg.NoPreload {
		progress(&cfg, "preload: %d keys of %d+%d bytes", cfg.Workload.Keys, cfg.Workload.KeySize, cfg.Workload.ValueSize)
		p, err := Preload(ctx, cfg)
		pre = &p
		if err != nil {
			return Result{Addr: cfg.Addr, Workload: cfg.Workload.String(), Preload: pre}, err
		}
		progress(&cfg, "preload: %v, hit ratio %.4f of %d checked", p.Elapsed.Round(time.Millisecond), p.HitRatio, p.Checked)
	}
	res, err := measure(ctx, cfg)
	res.Preload = pre
	if err != nil || cfg.RateFraction <= 0 || res.OpsPerSec <= 0 {
		return res, err
	}
	paced := cfg
	paced.Rate = cfg.RateFraction * res.OpsPerSec
	p, err := measure(ctx, paced)
	res.Paced = &p
	return res, err
}

// measure loads the server as cfg says for cfg.Warmup, then measures for
// cfg.Duration.
func measure(ctx context.Context, cfg Config) (Result, error) {
	res := Result{Addr: cfg.Addr, Workload: cfg.Workload.String(), Conns: cfg.Conns,
		Pipeline: cfg.Pipeline, MultiGet: cfg.MultiGet, Protocol: cfg.Protocol, Rate: cfg.Rate}
	var zipf *Zipf
	if cfg.Workload.Zipf {
		zipf = NewZipf(uint64(cfg.Workload.Keys), ZipfTheta)
	}
	value := makeValue(cfg.Workload.ValueSize)

	var phase atomic.Int32
	base := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopPacer := make(chan struct{})
	var workers []*worker
	var wait func() error
	var err error
	if cfg.useLoops() {
		workers, wait, err = startLoops(ctx, cancel, &cfg, zipf, value, base, &phase)
	} else {
		workers, wait, err = startGoroutines(ctx, cancel, &cfg, zipf, value, base, &phase, stopPacer)
	}
	if err != nil {
		return res, err
	}

	pace := ""
	if cfg.Rate > 0 {
		pace = fmt.Sprintf(", paced at %.0f ops/s", cfg.Rate)
	}
	progress(&cfg, "warm-up %v, %d connections, pipeline %d, %d keys per get, %s%s, %s", cfg.Warmup, cfg.Conns, cfg.Pipeline, cfg.MultiGet, cfg.Protocol, pace, driverName(cfg.useLoops()))
	sleep(ctx, cfg.Warmup)
	var statsBefore map[string]float64
	var statsErr error
	if cfg.ServerStats != "" {
		statsBefore, statsErr = FetchStats(cfg.Addr, cfg.ServerStats)
	}
	var cpuBefore time.Duration
	var cpuErr error
	if cfg.ServerPID > 0 {
		cpuBefore, cpuErr = ProcessCPU(cfg.ServerPID)
	}
	selfBefore := SelfCPU()
	start := time.Now()
	phase.Store(phaseMeasure)
	sleep(ctx, cfg.Duration)
	phase.Store(phaseDone)
	close(stopPacer)
	res.Elapsed = time.Since(start)
	res.LoadCPU = SelfCPU() - selfBefore
	res.LoadBusy = res.LoadCPU.Seconds() / (res.Elapsed.Seconds() * float64(runtime.GOMAXPROCS(0)))
	if cfg.ServerPID > 0 && cpuErr == nil {
		var after time.Duration
		if after, cpuErr = ProcessCPU(cfg.ServerPID); cpuErr == nil {
			res.ServerCPU = after - cpuBefore
		}
	}
	if cfg.ServerStats != "" && statsErr == nil {
		var after map[string]float64
		if after, statsErr = FetchStats(cfg.Addr, cfg.ServerStats); statsErr == nil {
			res.ServerStats = statsDelta(statsBefore, after)
		}
	}
	runErr := wait()

	var c counts
	var h Histogram
	for _, w := range workers {
		c.add(w.counts)
		h.Merge(&w.hist)
	}
	res.Ops, res.Requests = c.gets+c.sets, c.requests
	res.Gets, res.Sets, res.Hits, res.Misses, res.Errors = c.gets, c.sets, c.hits, c.misses, c.errors
	if res.Elapsed > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Elapsed.Seconds()
	}
	if c.gets > 0 {
		res.HitRatio = float64(c.hits) / float64(c.gets)
	}
	if res.Ops > 0 && res.ServerCPU > 0 {
		res.ServerCPUPerMop = time.Duration(float64(res.ServerCPU) * 1e6 / float64(res.Ops))
	}
	res.Latency = Latency{P50: h.Quantile(0.5), P95: h.Quantile(0.95), P99: h.Quantile(0.99),
		P999: h.Quantile(0.999), Mean: h.Mean(), Max: h.Max()}
	if err := errors.Join(runErr, cpuErr, statsErr); err != nil {
		return res, err
	}
	if ctx.Err() != nil && res.Elapsed < cfg.Duration {
		return res, fmt.Errorf("loadgen: %s: stopped after %v: %w", cfg.Addr, res.Elapsed, context.Cause(ctx))
	}
	progress(&cfg, "measured %v: %.0f ops/s", res.Elapsed.Round(time.Millisecond), res.OpsPerSec)
	return res, nil
}

// startGoroutines opens cfg.Conns connections and starts a writer and a
// reader goroutine for each (and the pacers of a paced run, which stop
// when stopPacer is closed). A connection's failure cancels the run. It
// returns the workers and a function that waits for every goroutine after
// phaseDone, closes the connections and returns their first errors.
func startGoroutines(ctx context.Context, cancel context.CancelFunc, cfg *Config, zipf *Zipf, value []byte, base time.Time, phase *atomic.Int32, stopPacer <-chan struct{}) ([]*worker, func() error, error) {
	var d net.Dialer
	workers := make([]*worker, cfg.Conns)
	for i := range workers {
		nc, err := d.DialContext(ctx, "tcp", cfg.Addr)
		if err != nil {
			for _, w := range workers[:i] {
				w.nc.Close()
			}
			return nil, nil, fmt.Errorf("loadgen: %w", err)
		}
		workers[i] = newWorker(cfg, nc, nc, i, zipf, value, base, phase).withChannels()
	}
	errs := make([]error, 2*len(workers))
	var wg sync.WaitGroup
	if cfg.Rate > 0 {
		startPacing(ctx, cfg, workers, base, phase, stopPacer, &wg)
	}
	for i, w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs[2*i] = w.write(ctx)
		}()
		go func() {
			defer wg.Done()
			errs[2*i+1] = w.read(ctx)
			if errs[2*i+1] != nil {
				w.nc.Close() // stops this connection's writer too
				cancel()
			}
		}()
	}
	stopAll := context.AfterFunc(ctx, func() {
		for _, w := range workers {
			w.nc.SetDeadline(time.Now()) // unblocks every read and write
		}
	})
	wait := func() error {
		wg.Wait()
		stopAll()
		for _, w := range workers {
			w.nc.Close()
		}
		return errors.Join(errs...)
	}
	return workers, wait, nil
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// progress writes a progress line if cfg asks for them.
func progress(cfg *Config, format string, args ...any) {
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "loadgen: %s: "+format+"\n", append([]any{cfg.Addr}, args...)...)
	}
}

// startPacing sets up the paced load of cfg.Rate over workers: with one
// request in flight each connection keeps its own schedule, every
// len(workers) intervals, offset by its index (worker.writeScheduled),
// with no pacer to hand it tokens (a token per request woke a writer
// goroutine, and at 80% of memcached's unpipelined peak on an H200 host
// the pacers fell behind, 2026-11-28); pipelined, pacers(...) pacer
// goroutines (added to wg) hand the connections tokens, pacer p taking
// every k-th worker from p on a schedule k times sparser, offset by p
// intervals: together the one schedule of the whole rate.
func startPacing(ctx context.Context, cfg *Config, workers []*worker, base time.Time, phase *atomic.Int32, stop <-chan struct{}, wg *sync.WaitGroup) {
	interval := pacingInterval(cfg, workers[0])
	if cfg.Pipeline == 1 {
		schedule(workers, interval, time.Since(base), stop)
		return
	}
	for _, w := range workers {
		w.tokens = make(chan time.Duration, pacerBacklog)
	}
	k := pacers(len(workers), runtime.GOMAXPROCS(0))
	for p := range k {
		var mine []*worker
		for i := p; i < len(workers); i += k {
			mine = append(mine, workers[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pace(ctx, mine, interval*time.Duration(k), base, interval*time.Duration(p), phase, stop)
		}()
	}
}

// pacingInterval is the time between two requests of cfg.Rate's schedule
// over all connections (a set is one operation, a get MultiGet), at least
// 1ns.
func pacingInterval(cfg *Config, w *worker) time.Duration {
	perReq := w.pSet + (1-w.pSet)*float64(cfg.MultiGet)
	return max(time.Duration(perReq/cfg.Rate*float64(time.Second)), 1)
}

// schedule gives each of workers (one request in flight each) its own
// schedule: worker i's first request at start + i*interval, then one every
// len(workers)*interval, so that together they keep one schedule of a
// request every interval.
func schedule(workers []*worker, interval, start time.Duration, stop <-chan struct{}) {
	for i, w := range workers {
		w.first = start + interval*time.Duration(i)
		w.period = interval * time.Duration(len(workers))
		w.stop = stop
	}
}
