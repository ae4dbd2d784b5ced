//go:build linux

package protocol

// An event loop's io_uring modes (Config.LoopIO). The loop's rounds are
// those of the epoll mode (loop_linux.go) with the system calls gathered:
// a group's reads, then its replies, are each submitted as one batch of
// recv (send, sendmsg) requests with one io_uring_enter. The requests
// carry MSG_DONTWAIT, so the kernel runs each during that io_uring_enter
// and completes it at once (or with EAGAIN) as the non-blocking read(2)
// or writev(2) of the epoll mode would: no buffer is in the kernel's
// hands once io_uring_enter has returned, the read buffers and replies
// keep their epoll-mode lifetimes, and the held replies, backpressure
// and budgets work unchanged (a connection whose socket takes less than
// all holds the rest and waits to be writable).
//
// LoopIOUring waits with epoll as the epoll mode does (level-triggered,
// parking or blocking, spinning: Config.BlockingWait and Config.SpinWait
// apply); the ring holds no request between two io_uring_enter calls and
// the loop's goroutine is not locked to a thread. Per round: an
// epoll_wait and two io_uring_enter calls, however many connections take
// part, where the epoll mode makes an epoll_wait and a read and a write
// per connection.
//
// LoopIOUringPoll waits on the ring too: readiness comes from a multishot
// poll request per connection (armed once, it posts a completion each
// time data arrives), a held connection waits for a one-shot POLLOUT
// poll, and the wait is an io_uring_enter that also submits the queued
// polls and cancellations: three io_uring_enter calls per round. Its ring
// is set up with IORING_SETUP_SINGLE_ISSUER and
// IORING_SETUP_DEFER_TASKRUN, so the loop's goroutine is locked to its
// thread: completions (the polls' wake-ups) are posted when that thread
// enters the ring, and no other thread is interrupted for them. An idle
// loop blocks that thread in io_uring_enter (as Config.BlockingWait does
// in epoll_wait); Config.BlockingWait and Config.SpinWait do not apply.
// Measured on the H200 (BENCHMARKS.md) it lost to LoopIOUring on the GPU
// engine at 64 connections and pipelined on both engines (probably the
// locked thread, which hands its processor over and back each time the
// loop's goroutine parks; not profiled).

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kinds of ring requests, the low byte of their user data; the rest holds
// the connection's descriptor (high 32 bits) and generation (24 bits), so
// that completions for a closed connection, or for an earlier one with
// the same descriptor, are told apart and ignored.
const (
	ukWake    = 1 // multishot poll of the loop's eventfd
	ukPollIn  = 2 // multishot poll of a connection for input
	ukPollOut = 3 // one-shot poll of a connection with held replies
	ukRecv    = 4
	ukSend    = 5
	ukCancel  = 6
)

// uringSend is one connection's sendmsg of a group: its slices are
// l.uvec[lo:hi].
type uringSend struct {
	c      *conn
	lo, hi int
}

// tag is the user data of c's request of the given kind.
func tag(kind uint64, c *conn) uint64 {
	return kind | uint64(c.ev.gen&0xffffff)<<8 | uint64(uint32(c.ev.fd))<<32
}

// uringStart readies the loop's ring on the calling goroutine, which it
// locks to its thread; false: the ring could not be enabled (logged), the
// loop runs on epoll.
func (l *loop) uringStart() bool {
	runtime.LockOSThread()
	if err := l.ring.enable(); err != nil {
		l.s.log.Warn("protocol: io_uring unavailable; the event loop uses epoll", "err", err)
		l.ring.close()
		l.ring, l.ringWait = nil, false
		runtime.UnlockOSThread()
		return false
	}
	l.armWake()
	l.onRing.Store(true)
	return true
}

// uringLoop runs the loop's rounds on its ring (see loop).
func (l *loop) uringLoop() {
	for {
		l.stages.start()
		if err := l.uwait(l.waitTimeout()); err != nil {
			l.s.log.Error("protocol: io_uring_enter", "err", err)
			time.Sleep(10 * time.Millisecond)
		}
		if l.afterWait() {
			return
		}
	}
}

// uwait submits the pending requests, waits up to timeout milliseconds
// (-1: no limit, 0: none) for a completion and handles those ready.
// Cost: one io_uring_enter.
func (l *loop) uwait(timeout int) error {
	var err error
	switch {
	case timeout == 0:
		_, err = l.ring.enter(l.ring.pending(), 0, false)
	case timeout < 0:
		_, err = l.ring.enter(l.ring.pending(), 1, true)
	default:
		_, err = l.ring.enterTimeout(l.ring.pending(), int64(timeout)*int64(time.Millisecond))
	}
	l.ureap()
	switch err {
	case nil, unix.ETIME, unix.EINTR, unix.EBUSY, unix.EAGAIN:
		return nil
	}
	return err
}

// ucomplete submits the pending requests and returns once every recv and
// sendmsg among them has completed (during the first io_uring_enter:
// they do not wait). Cost: one io_uring_enter.
func (l *loop) ucomplete() {
	for wait := false; ; wait = true {
		_, err := l.ring.enter(l.ring.pending(), 1, wait)
		l.ureap()
		if l.inflight == 0 {
			return
		}
		switch err {
		case nil, unix.EINTR, unix.EBUSY, unix.EAGAIN:
		default:
			// The kernel may still write the requests' buffers: going on
			// would let it write memory handed to others.
			panic(fmt.Sprintf("protocol: io_uring_enter with %d requests in flight: %v", l.inflight, err))
		}
	}
}

// ureap handles the completions ready.
func (l *loop) ureap() {
	for {
		head, tail := l.ring.ready()
		if head == tail {
			return
		}
		for ; head != tail; head++ {
			q := l.ring.cqe(head)
			l.ring.consume(head + 1)
			l.udispatch(q)
		}
	}
}

// udispatch handles one completion.
func (l *loop) udispatch(q uringCQE) {
	kind := q.userData & 0xff
	switch kind {
	case ukWake:
		l.takeIncoming()
		if q.flags&uringCQEFMore == 0 {
			l.armWake()
		}
		return
	case ukCancel:
		return
	case ukRecv, ukSend:
		l.inflight--
	}
	c := l.conns[int(int32(q.userData>>32))]
	if c == nil || c.ev.closed || c.ev.gen&0xffffff != uint32(q.userData>>8)&0xffffff {
		return // a connection closed since
	}
	switch kind {
	case ukRecv, ukSend:
		c.ev.res = q.res
	case ukPollIn:
		if q.flags&uringCQEFMore == 0 {
			l.upoll(c, ukPollIn, uringPollIn|uringPollRDHup, true) // the kernel ended it: again
		}
		c.ev.readable = true
		if c.ev.heldOff >= len(c.ev.held) {
			l.queue(c)
		}
	case ukPollOut:
		c.ev.pollOut = false
		if c.ev.heldOff < len(c.ev.held) {
			l.flush(c)
			if !c.ev.closed && c.ev.heldOff < len(c.ev.held) {
				l.uwatch(c, unix.EPOLLOUT)
			}
		}
	}
}

// armWake polls the loop's eventfd (new connections, shutdown, trims).
func (l *loop) armWake() {
	s := l.ring.sqe()
	s.opcode = uringOpPollAdd
	s.fd = int32(l.wakefd)
	s.opFlags = uringPollIn
	s.len = uringPollAddMulti
	s.userData = ukWake
}

// uadd gives c a generation and polls it for input.
func (l *loop) uadd(c *conn) {
	l.gen++
	c.ev.gen = l.gen
	l.upoll(c, ukPollIn, uringPollIn|uringPollRDHup, true)
}

// upoll queues a poll request for c.
func (l *loop) upoll(c *conn, kind uint64, events uint32, multi bool) {
	s := l.ring.sqe()
	s.opcode = uringOpPollAdd
	s.fd = int32(c.ev.fd)
	s.opFlags = events
	if multi {
		s.len = uringPollAddMulti
	}
	s.userData = tag(kind, c)
}

// uwatch is watch on the ring: EPOLLOUT polls c once for room to send
// (its held replies); input is always polled, so c is queued if input
// came meanwhile.
func (l *loop) uwatch(c *conn, events uint32) {
	if events&unix.EPOLLOUT != 0 {
		if !c.ev.pollOut {
			c.ev.pollOut = true
			l.upoll(c, ukPollOut, uringPollOut, false)
		}
		return
	}
	if c.ev.readable {
		l.queue(c)
	}
}

// ucancel queues the cancellation of c's polls (c is closing: the polls
// hold its socket open until they end).
func (l *loop) ucancel(c *conn) {
	l.cancel(tag(ukPollIn, c))
	if c.ev.pollOut {
		l.cancel(tag(ukPollOut, c))
	}
}

func (l *loop) cancel(userData uint64) {
	s := l.ring.sqe()
	s.opcode = uringOpAsyncCancel
	s.fd = -1
	s.addr = userData
	s.userData = ukCancel
}

// ureadAll is the reads of a group on the ring: one recv request for
// each connection with input to read, all submitted with one
// io_uring_enter. End of input or an error closes a connection.
func (l *loop) ureadAll(cur []*conn) {
	n := 0
	for _, c := range cur {
		c.ev.queued = false
		if !c.ev.readable || c.ev.st != psMore || c.ev.closed {
			continue
		}
		c.ev.readable = false
		if c.rend == len(c.rbuf) { // no room: prepareRead makes some (or refuses)
			if err := c.prepareRead(); err != nil {
				c.logErr(err)
				l.close(c)
				continue
			}
		}
		b := c.rbuf[c.rend:]
		s := l.ring.sqe()
		s.opcode = uringOpRecv
		s.fd = int32(c.ev.fd)
		s.addr = uint64(uintptr(unsafe.Pointer(&b[0])))
		s.len = uint32(len(b))
		s.opFlags = unix.MSG_DONTWAIT
		s.userData = tag(ukRecv, c)
		c.ev.inIO = true
		l.inflight++
		n++
	}
	if n == 0 {
		return
	}
	l.ucomplete()
	for _, c := range cur {
		if !c.ev.inIO {
			continue
		}
		c.ev.inIO = false
		space := len(c.rbuf) - c.rend
		switch r := c.ev.res; {
		case r > 0:
			c.rend += int(r)
			l.hot.bytesRead.Add(uint64(r))
			if int(r) == space && l.ringWait {
				c.ev.readable = true // maybe more: polls report new input only (epoll's level trigger would)
			}
		case r == -int32(unix.EAGAIN):
		case r == -int32(unix.EINTR):
			c.ev.readable = true
		default: // end of input (0) or a socket error
			l.close(c)
		}
	}
}

// usendAll is the writes of a group on the ring: one sendmsg request (a
// send where the replies are one slice) for each connection with replies, all submitted with one io_uring_enter.
// What a socket does not take is held (hold). A connection with more
// than IOV_MAX reply slices is written with writev instead (write).
func (l *loop) usendAll(cur []*conn) {
	segs, sends := 0, 0
	for _, c := range cur {
		if c.ev.closed || c.out.len() == 0 {
			continue
		}
		c.out.cut()
		if len(c.out.segs) > 1024 {
			l.write(c)
			continue
		}
		segs += len(c.out.segs)
		sends++
	}
	if sends == 0 {
		return
	}
	// Sized first: the requests point into these slices.
	if cap(l.uiov) < segs {
		l.uiov = make([]unix.Iovec, 0, segs)
		l.uvec = make([][]byte, 0, segs)
	}
	if cap(l.umsgs) < sends {
		l.umsgs = make([]unix.Msghdr, sends)
	}
	iov, vec, msgs, list := l.uiov[:0], l.uvec[:0], l.umsgs[:sends], l.usends[:0]
	for _, c := range cur {
		if c.ev.closed || c.out.len() == 0 {
			continue
		}
		o := &c.out
		lo := len(vec)
		for _, sg := range o.segs {
			b := sg.ext
			if b == nil {
				b = o.buf[sg.off:sg.end]
			}
			if len(b) == 0 {
				continue
			}
			vec = append(vec, b)
			v := unix.Iovec{Base: &b[0]}
			v.SetLen(len(b))
			iov = append(iov, v)
		}
		s := l.ring.sqe()
		s.fd = int32(c.ev.fd)
		if n := len(vec) - lo; n == 1 { // one slice: a send, with no message header
			s.opcode = uringOpSend
			s.addr = uint64(uintptr(unsafe.Pointer(&vec[lo][0])))
			s.len = uint32(len(vec[lo]))
		} else {
			m := &msgs[len(list)]
			*m = unix.Msghdr{Iov: &iov[lo]}
			m.SetIovlen(n)
			s.opcode = uringOpSendmsg
			s.addr = uint64(uintptr(unsafe.Pointer(m)))
		}
		s.opFlags = unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL
		s.userData = tag(ukSend, c)
		c.state.Store(stateWrite)
		l.inflight++
		list = append(list, uringSend{c: c, lo: lo, hi: len(vec)})
	}
	l.ucomplete()
	for _, sd := range list {
		c := sd.c
		v := consume(vec[sd.lo:sd.hi], 0)
		switch r := c.ev.res; {
		case r >= 0:
			if r > 0 {
				l.hot.bytesWritten.Add(uint64(r))
				v = consume(v, int(r))
			}
			if len(v) > 0 {
				l.hold(c, v)
			}
		case r == -int32(unix.EAGAIN) || r == -int32(unix.EINTR):
			l.hold(c, v)
		default:
			c.logErr(fmt.Errorf("protocol: write replies: %w", unix.Errno(-r)))
			l.close(c)
		}
		c.out.reset()
	}
	clear(vec) // no references kept into the round's batch
	clear(iov)
	clear(msgs)
	clear(list)
	l.uiov, l.uvec, l.umsgs, l.usends = iov[:0], vec[:0], msgs, list[:0]
}
