package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"
)

// Phases of a run, read by every connection's reader.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDone
)

// replyTimeout is how long a connection waits for a reply before giving
// up on the server.
const replyTimeout = 10 * time.Second

// counts are the operation counts of one connection (or, summed, a run).
type counts struct {
	requests, gets, sets, hits, misses, errors uint64
}

func (c *counts) add(o counts) {
	c.requests += o.requests
	c.gets += o.gets
	c.sets += o.sets
	c.hits += o.hits
	c.misses += o.misses
	c.errors += o.errors
}

// request is a request in flight: when it was sent and what it is.
type request struct {
	start time.Duration // since the run's base time
	set   bool
}

// worker drives one connection: a writer goroutine keeps up to Pipeline
// requests in flight, a reader goroutine reads the replies in order and
// counts them while the phase is phaseMeasure.
type worker struct {
	cfg      *Config
	nc       net.Conn
	codec    *codec
	keys     keyChooser
	pSet     float64       // probability that a request is a set
	interval time.Duration // paced: time between this connection's requests (0: as fast as the pipeline allows)
	offset   time.Duration // paced: this connection's first send, after base
	base     time.Time
	phase    *atomic.Int32
	slots    chan struct{} // one per request in flight
	inflight chan request  // the requests in flight, in order
	opaque   uint32

	counts counts // written by the reader only
	hist   Histogram
}

func newWorker(cfg *Config, nc net.Conn, i int, zipf *Zipf, value []byte, base time.Time, phase *atomic.Int32) *worker {
	g, m := cfg.Workload.GetRatio, float64(cfg.MultiGet)
	pSet := 0.0
	if g < 1 {
		// A get request does m operations: choose requests so that a
		// fraction g of the operations are gets.
		pSet = (1 - g) / (1 - g + g/m)
	}
	var interval, offset time.Duration
	if cfg.Rate > 0 {
		// Operations per request: a set is one, a get m.
		perReq := pSet + (1-pSet)*m
		interval = time.Duration(float64(cfg.Conns) * perReq / cfg.Rate * float64(time.Second))
		interval = max(interval, 1)
		offset = interval * time.Duration(i) / time.Duration(cfg.Conns) // spread the connections' schedules
	}
	return &worker{
		interval: interval,
		offset:   offset,
		cfg:      cfg,
		nc:       nc,
		codec:    newCodec(cfg.Protocol, nc, cfg.Workload.KeySize, value),
		keys:     keyChooser{n: uint64(cfg.Workload.Keys), zipf: zipf, r: rand.New(rand.NewPCG(cfg.Seed+uint64(i), 0x6a09e667f3bcc909))},
		pSet:     pSet,
		base:     base,
		phase:    phase,
		slots:    make(chan struct{}, cfg.Pipeline),
		inflight: make(chan request, cfg.Pipeline),
	}
}

// write sends requests until the phase is phaseDone or ctx ends, filling
// the pipeline and flushing once per round (or, paced, on schedule). It
// closes inflight when done.
func (w *worker) write(ctx context.Context) error {
	defer close(w.inflight)
	if w.interval > 0 {
		return w.writePaced(ctx)
	}
	for w.phase.Load() != phaseDone {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		for n := 1; ; n++ {
			w.inflight <- w.writeRequest()
			if n == w.cfg.Pipeline {
				break
			}
			select {
			case w.slots <- struct{}{}:
				continue
			default:
			}
			break
		}
		if err := w.codec.bw.Flush(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("loadgen: %s: write: %w", w.cfg.Addr, err)
		}
	}
	return nil
}

// writePaced sends one request every interval on a fixed schedule: each
// request whose time has come is sent (waiting for a pipeline slot if the
// server is behind), then the connection flushes and sleeps until the next
// one is due. A request's latency counts from its scheduled time, so time
// spent waiting for a slot is charged to the server.
func (w *worker) writePaced(ctx context.Context) error {
	next := time.Since(w.base) + w.offset
	for w.phase.Load() != phaseDone {
		if wait := next - time.Since(w.base); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil
			}
		}
		now := time.Since(w.base)
		for sent := 0; next <= now && sent < w.cfg.Pipeline; sent++ {
			select {
			case w.slots <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			w.inflight <- w.writeRequestAt(next)
			next += w.interval
		}
		if err := w.codec.bw.Flush(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("loadgen: %s: write: %w", w.cfg.Addr, err)
		}
	}
	return nil
}

// writeRequest buffers one request and returns its record.
func (w *worker) writeRequest() request { return w.writeRequestAt(time.Since(w.base)) }

// writeRequestAt buffers one request whose latency counts from start
// (since the run's base time) and returns its record.
func (w *worker) writeRequestAt(start time.Duration) request {
	w.opaque++
	r := request{start: start}
	if w.pSet > 0 && w.keys.r.Float64() < w.pSet {
		r.set = true
		w.codec.writeSet(w.keys.next(), w.opaque)
		return r
	}
	w.codec.writeGet(w.cfg.MultiGet, w.keys.next, w.opaque)
	return r
}

// read reads the reply of every request in flight until the writer is
// done, recording counts and latencies of those that complete while the
// phase is phaseMeasure. It stops early, without an error, when ctx ends.
func (w *worker) read(ctx context.Context) error {
	n := 0
	for r := range w.inflight {
		if n%64 == 0 {
			if ctx.Err() != nil {
				return nil
			}
			w.nc.SetReadDeadline(time.Now().Add(replyTimeout))
		}
		n++
		var c counts
		c.requests = 1
		if r.set {
			c.sets = 1
			ok, err := w.codec.readSet()
			if err != nil {
				return w.readError(ctx, err)
			}
			if !ok {
				c.errors = 1
			}
		} else {
			hits, errs, err := w.codec.readGet(w.cfg.MultiGet)
			if err != nil {
				return w.readError(ctx, err)
			}
			m := uint64(w.cfg.MultiGet)
			c.gets, c.hits, c.errors = m, uint64(hits), uint64(errs)
			c.misses = m - min(m, uint64(hits+errs))
		}
		if w.phase.Load() == phaseMeasure {
			w.hist.Record(time.Since(w.base) - r.start)
			w.counts.add(c)
		}
		<-w.slots
	}
	return nil
}

// readError wraps a read error, or drops it when ctx ended (the run
// stopped the connection).
func (w *worker) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("loadgen: %s: %w", w.cfg.Addr, err)
}
