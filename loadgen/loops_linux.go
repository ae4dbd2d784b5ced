//go:build linux

package loadgen

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// loopsSupported reports whether this platform has the event-loop driver.
const loopsSupported = true

// loopConn is one connection of the event-loop driver: a nonblocking
// socket, its worker (key and operation choices, codec) and the requests
// in flight, oldest first.
type loopConn struct {
	fd       int
	idx      int // the connection's index in its loop (its epoll data)
	w        *worker
	io       *loopIO
	inflight []request // a FIFO: inflight[head:]
	head     int
	rbuf     []byte // received bytes; rbuf[roff:rlen] are not parsed yet
	roff     int
	rlen     int
	woff     int  // io.out[woff:] is not sent yet
	wantOut  bool // registered for EPOLLOUT (a send was cut short)
	lastRead time.Time
	next     time.Duration // paced: when the next request is due (since the run's base time)
}

// loopIO is the codec's reader and writer on an event loop: the writer
// appends to out (sent by the loop), the reader hands the parser the
// received bytes in and then reports io.EOF, so that an incomplete reply
// fails its parse with an error wrapping io.EOF or io.ErrUnexpectedEOF
// and is parsed again, whole, when more bytes arrive.
type loopIO struct {
	out []byte
	in  []byte
	pos int
}

func (l *loopIO) Write(p []byte) (int, error) {
	l.out = append(l.out, p...)
	return len(p), nil
}

func (l *loopIO) Read(p []byte) (int, error) {
	if l.pos >= len(l.in) {
		return 0, io.EOF
	}
	n := copy(p, l.in[l.pos:])
	l.pos += n
	return n, nil
}

// dialRaw opens a blocking TCP connection to addr outside Go's network
// poller, with TCP_NODELAY as net.Dial sets it, and then makes it
// nonblocking for an event loop.
func dialRaw(addr string) (int, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return -1, err
	}
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ip4 := ta.IP.To4(); ip4 != nil {
		sa = &unix.SockaddrInet4{Port: ta.Port, Addr: [4]byte(ip4)}
	} else {
		family = unix.AF_INET6
		sa6 := &unix.SockaddrInet6{Port: ta.Port}
		copy(sa6.Addr[:], ta.IP.To16())
		sa = sa6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	for {
		err = unix.Connect(fd, sa)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("dial tcp %s: %w", addr, err)
	}
	return fd, nil
}

// startLoops opens cfg.Conns connections and starts min(GOMAXPROCS, Conns)
// event loops over them (connection i on loop i mod loops), each on its
// own locked OS thread, keeping up to cfg.Pipeline requests in flight per
// connection as the goroutine driver does. It returns the loops' workers
// (for their counts and histograms) and a function that waits for the
// loops to end (after phaseDone or ctx's end) and closes the connections,
// returning the first error of any loop. A loop's failure cancels the run.
// A paced run (one request in flight per connection: Config.useLoops)
// gives each connection its own schedule, as the goroutine driver does
// (schedule), kept by its loop.
func startLoops(ctx context.Context, cancel context.CancelFunc, cfg *Config, zipf *Zipf, value []byte, base time.Time, phase *atomic.Int32) ([]*worker, func() error, error) {
	conns := make([]*loopConn, cfg.Conns)
	closeAll := func() {
		for _, c := range conns {
			if c != nil {
				unix.Close(c.fd)
			}
		}
	}
	workers := make([]*worker, cfg.Conns)
	for i := range conns {
		fd, err := dialRaw(cfg.Addr)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("loadgen: %w", err)
		}
		lio := &loopIO{}
		w := newWorker(cfg, nil, lio, i, zipf, value, base, phase)
		workers[i] = w
		conns[i] = &loopConn{fd: fd, w: w, io: lio, inflight: make([]request, 0, cfg.Pipeline), rbuf: make([]byte, 16<<10)}
	}
	if cfg.Rate > 0 {
		schedule(workers, pacingInterval(cfg, workers[0]), time.Since(base), nil)
	}
	n := min(runtime.GOMAXPROCS(0), len(conns))
	errs := make(chan error, n)
	for l := range n {
		var mine []*loopConn
		for i := l; i < len(conns); i += n {
			conns[i].idx = len(mine)
			mine = append(mine, conns[i])
		}
		go func() {
			err := runLoop(ctx, cfg, mine, phase)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	wait := func() error {
		var all []error
		for range n {
			all = append(all, <-errs)
		}
		closeAll()
		return errors.Join(all...)
	}
	return workers, wait, nil
}

// runLoop serves conns on this goroutine's locked thread until the phase
// is phaseDone or ctx ends: it fills every connection's pipeline, then
// waits in epoll_wait; for each readable connection it reads once, parses
// every complete reply (recording it while the phase is phaseMeasure),
// refills the pipeline and sends the new requests with one write. Paced,
// a connection whose reply is in sends its next request at once if it is
// due (its latency counted from its due time: the server is charged for
// the queue) and otherwise waits in the loop's heap of due times, behind a
// timerfd armed for the earliest, and is then sent (its latency counted
// from the send, so that the loop's own lateness in waking is not charged
// to the server), as worker.writeScheduled does. A connection with
// requests in flight and no reply for replyTimeout fails the loop, as a
// closed connection does.
func runLoop(ctx context.Context, cfg *Config, conns []*loopConn, phase *atomic.Int32) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("loadgen: epoll_create1: %w", err)
	}
	defer unix.Close(epfd)
	var p *pacer
	if cfg.Rate > 0 {
		if p, err = newPacer(epfd, len(conns)); err != nil {
			return fmt.Errorf("loadgen: %w", err)
		}
		defer unix.Close(p.tfd)
	}
	now := time.Now()
	for _, c := range conns {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.idx)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			return fmt.Errorf("loadgen: epoll_ctl: %w", err)
		}
		c.lastRead = now
		if p != nil {
			c.next = c.w.first
			heap.Push(&p.due, c)
		} else if err := c.refill(epfd, cfg.Pipeline); err != nil {
			return c.fail(cfg, err)
		}
	}
	events := make([]unix.EpollEvent, min(len(conns)+1, 512))
	lastCheck := now
	for phase.Load() != phaseDone && ctx.Err() == nil {
		if p != nil {
			if err := p.sendDue(epfd); err != nil {
				return fmt.Errorf("loadgen: %s: %w", cfg.Addr, err)
			}
		}
		n, err := unix.EpollWait(epfd, events, 50)
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("loadgen: epoll_wait: %w", err)
		}
		measuring := phase.Load() == phaseMeasure
		for _, ev := range events[:max(n, 0)] {
			if int(ev.Fd) == len(conns) { // the pacer's timer
				p.clear()
				continue
			}
			c := conns[ev.Fd]
			if ev.Events&unix.EPOLLOUT != 0 {
				if err := c.send(epfd); err != nil {
					return c.fail(cfg, err)
				}
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
				continue
			}
			if err := c.receive(measuring); err != nil {
				if phase.Load() == phaseDone {
					return nil
				}
				return c.fail(cfg, err)
			}
			if phase.Load() == phaseDone {
				continue
			}
			if p != nil {
				err = p.replied(epfd, c)
			} else {
				err = c.refill(epfd, cfg.Pipeline)
			}
			if err != nil {
				return c.fail(cfg, err)
			}
		}
		if n <= 0 || time.Since(lastCheck) > time.Second {
			now := time.Now()
			lastCheck = now
			for _, c := range conns {
				if c.head < len(c.inflight) && now.Sub(c.lastRead) > replyTimeout {
					return c.fail(cfg, fmt.Errorf("no reply in %v", replyTimeout))
				}
			}
		}
	}
	return nil
}

// fail wraps a connection's error with the server's address.
func (c *loopConn) fail(cfg *Config, err error) error {
	return fmt.Errorf("loadgen: %s: %w", cfg.Addr, err)
}

// refill buffers requests until pipeline are in flight and sends them.
func (c *loopConn) refill(epfd, pipeline int) error {
	if c.head == len(c.inflight) {
		c.inflight, c.head = c.inflight[:0], 0
	}
	added := false
	for len(c.inflight)-c.head < pipeline {
		if c.head > 0 && len(c.inflight) == cap(c.inflight) {
			c.inflight = c.inflight[:copy(c.inflight, c.inflight[c.head:])]
			c.head = 0
		}
		c.inflight = append(c.inflight, c.w.writeRequest())
		added = true
	}
	if !added {
		return nil
	}
	c.w.codec.bw.Flush() // into c.io.out: cannot fail
	return c.send(epfd)
}

// sendAt sends one request whose latency counts from start (since the
// run's base time); the connection has none in flight.
func (c *loopConn) sendAt(epfd int, start time.Duration) error {
	c.inflight, c.head = append(c.inflight[:0], c.w.writeRequestAt(start)), 0
	c.w.codec.bw.Flush() // into c.io.out: cannot fail
	c.lastRead = time.Now()
	return c.send(epfd)
}

// send writes what is not sent yet; a send cut short registers the
// connection for EPOLLOUT until the rest is out.
func (c *loopConn) send(epfd int) error {
	for c.woff < len(c.io.out) {
		n, err := unix.Write(c.fd, c.io.out[c.woff:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			if !c.wantOut {
				c.wantOut = true
				ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT, Fd: int32(c.idx)}
				if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
					return fmt.Errorf("epoll_ctl: %w", err)
				}
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		c.woff += n
	}
	c.io.out, c.woff = c.io.out[:0], 0
	if c.wantOut {
		c.wantOut = false
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.idx)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
			return fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	return nil
}

// receive reads what the socket holds (one read) and parses every
// complete reply of the requests in flight, recording those that complete
// while measuring.
func (c *loopConn) receive(measuring bool) error {
	if c.roff > 0 {
		c.rlen = copy(c.rbuf, c.rbuf[c.roff:c.rlen])
		c.roff = 0
	}
	if c.rlen == len(c.rbuf) {
		c.rbuf = append(c.rbuf, make([]byte, len(c.rbuf))...)
	}
	n, err := unix.Read(c.fd, c.rbuf[c.rlen:])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return nil
	case err != nil:
		return fmt.Errorf("read: %w", err)
	case n == 0:
		return fmt.Errorf("read: %w", io.EOF)
	}
	c.rlen += n
	c.lastRead = time.Now()
	w := c.w
	for c.head < len(c.inflight) && c.roff < c.rlen {
		c.io.in, c.io.pos = c.rbuf[c.roff:c.rlen], 0
		w.codec.br.Reset(c.io)
		r := c.inflight[c.head]
		k, err := w.readReply(r)
		if err != nil {
			if incomplete(err) {
				return nil
			}
			return err
		}
		c.roff += c.io.pos - w.codec.br.Buffered()
		c.head++
		if measuring {
			w.hist.Record(time.Since(w.base) - r.start)
			w.counts.add(k)
		}
	}
	if c.head == len(c.inflight) && c.roff < c.rlen {
		return fmt.Errorf("%d bytes with no request in flight: %w", c.rlen-c.roff, errDesync)
	}
	return nil
}

// incomplete reports whether a parse failed only for want of bytes not
// received yet.
func incomplete(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// pacer keeps the schedules of a paced loop's connections (one request in
// flight each): the connections waiting for their next due time, in a
// heap, and a timerfd in the loop's epoll set (its data the number of
// connections) armed for the earliest.
type pacer struct {
	tfd   int
	due   dueHeap
	armed time.Duration // the due time the timer is armed for (-1: none)
	tbuf  [8]byte
}

func newPacer(epfd, conns int) (*pacer, error) {
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(conns)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, tfd, &ev); err != nil {
		unix.Close(tfd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	return &pacer{tfd: tfd, armed: -1}, nil
}

// clear reads the timer's expirations (it fired).
func (p *pacer) clear() {
	unix.Read(p.tfd, p.tbuf[:])
	p.armed = -1
}

// replied schedules c's next request, its reply being in: sent at once,
// charged from its due time, if that has passed; else c waits in the heap.
func (p *pacer) replied(epfd int, c *loopConn) error {
	if c.head < len(c.inflight) {
		return nil // the reply is not complete yet
	}
	if now := time.Since(c.w.base); c.next <= now {
		start := c.next
		c.next += c.w.period
		return c.sendAt(epfd, start)
	}
	heap.Push(&p.due, c)
	return nil
}

// sendDue sends the request of every waiting connection whose due time has
// passed, charged from now, and arms the timer for the earliest one left.
func (p *pacer) sendDue(epfd int) error {
	if len(p.due) == 0 {
		return nil
	}
	now := time.Since(p.due[0].w.base)
	for len(p.due) > 0 && p.due[0].next <= now {
		c := heap.Pop(&p.due).(*loopConn)
		c.next += c.w.period
		if err := c.sendAt(epfd, now); err != nil {
			return err
		}
	}
	if len(p.due) == 0 || p.due[0].next == p.armed {
		return nil
	}
	p.armed = p.due[0].next
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(p.armed-now, time.Microsecond)))}
	if err := unix.TimerfdSettime(p.tfd, 0, &spec, nil); err != nil {
		return fmt.Errorf("timerfd_settime: %w", err)
	}
	return nil
}

// dueHeap orders waiting connections by their next due time.
type dueHeap []*loopConn

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].next < h[j].next }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(*loopConn)) }
func (h *dueHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
