package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
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
// counts them while the phase is phaseMeasure (the goroutine driver); or
// an event loop does both for many workers (the loop driver, nc nil, the
// codec reading and writing the loop's buffers).
type worker struct {
	cfg    *Config
	nc     net.Conn
	codec  *codec
	keys   keyChooser
	pSet   float64            // probability that a request is a set
	tokens chan time.Duration // paced, pipelined: the scheduled send times of this connection's requests (nil: as fast as the pipeline allows)
	// paced, one request in flight: this connection's schedule, a request
	// at first and then every period (since base), kept by its writer
	// (writeScheduled); period 0 when not.
	first, period time.Duration
	stop          <-chan struct{} // closed when the paced run ends (ends a writeScheduled wait)
	base          time.Time
	phase         *atomic.Int32
	slots         chan struct{} // one per request in flight
	inflight      chan request  // the requests in flight, in order
	opaque        uint32

	counts counts // written by the reader only
	hist   Histogram
}

func newWorker(cfg *Config, nc net.Conn, rw io.ReadWriter, i int, zipf *Zipf, value []byte, base time.Time, phase *atomic.Int32) *worker {
	g, m := cfg.Workload.GetRatio, float64(cfg.MultiGet)
	pSet := 0.0
	if g < 1 {
		// A get request does m operations: choose requests so that a
		// fraction g of the operations are gets.
		pSet = (1 - g) / (1 - g + g/m)
	}
	return &worker{
		cfg:   cfg,
		nc:    nc,
		codec: newCodec(cfg.Protocol, rw, cfg.Workload.KeySize, value),
		keys:  keyChooser{n: uint64(cfg.Workload.Keys), zipf: zipf, r: rand.New(rand.NewPCG(cfg.Seed+uint64(i), 0x6a09e667f3bcc909))},
		pSet:  pSet,
		base:  base,
		phase: phase,
	}
}

// withChannels gives w the channels of the goroutine driver's writer and
// reader (a slot per request in flight, the requests in order); the event
// loops keep their own in-flight list and need neither.
func (w *worker) withChannels() *worker {
	w.slots = make(chan struct{}, w.cfg.Pipeline)
	w.inflight = make(chan request, w.cfg.Pipeline)
	return w
}

// write sends requests until the phase is phaseDone or ctx ends, filling
// the pipeline and flushing once per round (or, paced, on schedule). It
// closes inflight when done.
func (w *worker) write(ctx context.Context) error {
	defer close(w.inflight)
	if w.period > 0 {
		return w.writeScheduled(ctx)
	}
	if w.tokens != nil {
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

// writePaced sends a request for every token the pacer hands this
// connection (waiting for a pipeline slot if the server is behind) and
// flushes when no token is waiting. A request's latency counts from its
// token's time, so time spent waiting for a slot is charged to the server.
func (w *worker) writePaced(ctx context.Context) error {
	for w.phase.Load() != phaseDone {
		var at time.Duration
		select {
		case t, ok := <-w.tokens:
			if !ok {
				w.codec.bw.Flush() // the pacer is done: send what is buffered
				return nil
			}
			at = t
		case <-ctx.Done():
			return nil
		}
		select {
		case w.slots <- struct{}{}:
		default:
			// The pipeline is full: send what is buffered, then wait.
			if err := w.codec.bw.Flush(); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("loadgen: %s: write: %w", w.cfg.Addr, err)
			}
			select {
			case w.slots <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
		}
		w.inflight <- w.writeRequestAt(at)
		if len(w.tokens) > 0 {
			continue
		}
		if err := w.codec.bw.Flush(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("loadgen: %s: write: %w", w.cfg.Addr, err)
		}
	}
	w.codec.bw.Flush() // every request in flight must reach the server
	return nil
}

// writeScheduled sends this connection's requests on its own schedule
// (first, then every period) with one request in flight: after each reply
// it sleeps until the next request's time and sends it. A request whose
// time passed while the previous one waited for its reply is sent at once
// and its latency counts from its time (the server is charged for the
// queue); one sent after a sleep counts from when it was sent, so the
// generator's own lateness in waking up (Go's timers can fire tens of
// microseconds late, up to a millisecond on an idle processor) is not
// charged to the server. It does not spin: a goroutine that keeps
// yielding keeps the runtime from polling the network, and every reader
// would wait for that.
func (w *worker) writeScheduled(ctx context.Context) error {
	next := w.first
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for w.phase.Load() != phaseDone {
		select {
		case w.slots <- struct{}{}: // the previous reply is in
		case <-ctx.Done():
			return nil
		}
		start := next
		if wait := next - time.Since(w.base); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-w.stop: // a long wait of a low rate ends with the run
				return nil
			case <-ctx.Done():
				return nil
			}
			start = time.Since(w.base)
		}
		w.inflight <- w.writeRequestAt(start)
		if err := w.codec.bw.Flush(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("loadgen: %s: write: %w", w.cfg.Addr, err)
		}
		next += w.period
	}
	return nil
}

// pace hands the workers tokens at the times of a fixed schedule of one
// request every interval from offset on (round robin over the workers;
// times are durations since base), until the phase
// is phaseDone (stop is closed then) or ctx ends; then it closes their
// token channels.
// One goroutine keeps the schedule for all connections: it sleeps while
// the next token is more than pacerSpin away and spins closer, so that a
// token leaves within microseconds of its time rather than a timer's
// millisecond; it occupies one of the generator's CPUs for that. With a
// single CPU (GOMAXPROCS 1) spinning would starve the connections, so it
// sleeps instead and tokens leave up to a timer's granularity late. A
// worker whose backlog is full holds the pacer back; the lateness is
// charged to the server (the tokens keep their times).
func pace(ctx context.Context, workers []*worker, interval time.Duration, base time.Time, offset time.Duration, phase *atomic.Int32, stop <-chan struct{}) {
	defer func() {
		for _, w := range workers {
			close(w.tokens)
		}
	}()
	spin := runtime.GOMAXPROCS(0) > 1
	next := time.Since(base) + offset
	for i := 0; ctx.Err() == nil && phase.Load() != phaseDone; i++ {
		for spins := 0; ; spins++ {
			wait := next - time.Since(base)
			if wait <= 0 {
				break
			}
			switch {
			case wait > pacerSpin || !spin:
				time.Sleep(wait - pacerSpin/2*time.Duration(btoi(spin)))
			case spins%4096 == 4095:
				runtime.Gosched()
			}
			if phase.Load() == phaseDone {
				return
			}
		}
		w := workers[i%len(workers)]
		select {
		case w.tokens <- next:
		case <-ctx.Done():
			return
		case <-stop:
			return
		}
		next += interval
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pacers returns how many pacer goroutines share the schedule of conns
// pipelined connections (one request in flight: writeScheduled, no
// pacer) on procs processors: one per four processors (each spins on
// one near its tokens' times), at most one per connection, so that handing
// out tokens (a channel send that wakes the connection's writer, about 2
// µs) does not rest on one goroutine. On an H200 host's 8-processor
// generator, paced unpipelined runs at 80% of memcached's 600-660 k/s peak
// fell behind their schedule with one pacer and still did with two
// (2026-11-28): the writers' wake-ups, not only the pacer, limit them.
func pacers(conns, procs int) int {
	return max(1, min(conns, procs/4))
}

// pacerSpin is how close to a token's time the pacer stops sleeping.
const pacerSpin = time.Millisecond

// pacerBacklog is how many tokens a connection may have waiting.
const pacerBacklog = 4096

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
		c, err := w.readReply(r)
		if err != nil {
			return w.readError(ctx, err)
		}
		if w.phase.Load() == phaseMeasure {
			w.hist.Record(time.Since(w.base) - r.start)
			w.counts.add(c)
		}
		<-w.slots
	}
	return nil
}

// readReply reads the reply of request r and returns its counts.
func (w *worker) readReply(r request) (counts, error) {
	c := counts{requests: 1}
	if r.set {
		c.sets = 1
		ok, err := w.codec.readSet()
		if !ok {
			c.errors = 1
		}
		return c, err
	}
	hits, errs, err := w.codec.readGet(w.cfg.MultiGet)
	m := uint64(w.cfg.MultiGet)
	c.gets, c.hits, c.errors = m, uint64(hits), uint64(errs)
	c.misses = m - min(m, uint64(hits+errs))
	return c, err
}

// readError wraps a read error, or drops it when ctx ended (the run
// stopped the connection).
func (w *worker) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("loadgen: %s: %w", w.cfg.Addr, err)
}
