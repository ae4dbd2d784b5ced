//go:build linux

package loadgen

import (
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
// It does not pace (stopPacer is unused: Config.useLoops is false for a
// paced run).
func startLoops(ctx context.Context, cancel context.CancelFunc, cfg *Config, zipf *Zipf, value []byte, base time.Time, phase *atomic.Int32, stopPacer <-chan struct{}) ([]*worker, func() error, error) {
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
	n := min(runtime.GOMAXPROCS(0), len(conns))
	errs := make(chan error, n)
	for l := range n {
		var mine []*loopConn
		for i := l; i < len(conns); i += n {
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
// refills the pipeline and sends the new requests with one write. A
// connection with requests in flight and no reply for replyTimeout fails
// the loop, as a closed connection does.
func runLoop(ctx context.Context, cfg *Config, conns []*loopConn, phase *atomic.Int32) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("loadgen: epoll_create1: %w", err)
	}
	defer unix.Close(epfd)
	now := time.Now()
	for i, c := range conns {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			return fmt.Errorf("loadgen: epoll_ctl: %w", err)
		}
		c.lastRead = now
		if err := c.refill(epfd, i, cfg.Pipeline); err != nil {
			return c.fail(cfg, err)
		}
	}
	events := make([]unix.EpollEvent, min(len(conns), 512))
	lastCheck := now
	for phase.Load() != phaseDone && ctx.Err() == nil {
		n, err := unix.EpollWait(epfd, events, 50)
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("loadgen: epoll_wait: %w", err)
		}
		measuring := phase.Load() == phaseMeasure
		for _, ev := range events[:max(n, 0)] {
			i := int(ev.Fd)
			c := conns[i]
			if ev.Events&unix.EPOLLOUT != 0 {
				if err := c.send(epfd, i); err != nil {
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
			if phase.Load() != phaseDone {
				if err := c.refill(epfd, i, cfg.Pipeline); err != nil {
					return c.fail(cfg, err)
				}
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
func (c *loopConn) refill(epfd, i, pipeline int) error {
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
	return c.send(epfd, i)
}

// send writes what is not sent yet; a send cut short registers the
// connection for EPOLLOUT until the rest is out.
func (c *loopConn) send(epfd, i int) error {
	for c.woff < len(c.io.out) {
		n, err := unix.Write(c.fd, c.io.out[c.woff:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			if !c.wantOut {
				c.wantOut = true
				ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT, Fd: int32(i)}
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
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
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
		var k counts
		k.requests = 1
		if r.set {
			k.sets = 1
			ok, err := w.codec.readSet()
			if err != nil {
				if incomplete(err) {
					return nil
				}
				return err
			}
			if !ok {
				k.errors = 1
			}
		} else {
			hits, errs, err := w.codec.readGet(w.cfg.MultiGet)
			if err != nil {
				if incomplete(err) {
					return nil
				}
				return err
			}
			m := uint64(w.cfg.MultiGet)
			k.gets, k.hits, k.errors = m, uint64(hits), uint64(errs)
			k.misses = m - min(m, uint64(hits+errs))
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
