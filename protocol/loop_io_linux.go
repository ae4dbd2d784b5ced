//go:build linux

package protocol

// An event loop's socket I/O: reads and vectored writes as raw system calls,
// and the held replies of a connection whose socket took less than all.

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// write sends c's rendered replies with vectored writes until the socket
// takes no more; the rest is copied to c's held replies, counted in
// Server.held, and c is watched for writability. It reports false when
// it closed c.
func (l *loop) write(c *conn) bool {
	o := &c.out
	o.cut()
	iov := l.iov[:0]
	for _, sg := range o.segs {
		if sg.ext != nil {
			iov = append(iov, sg.ext)
		} else {
			iov = append(iov, o.buf[sg.off:sg.end])
		}
	}
	defer func() {
		clear(iov)
		l.iov = iov[:0]
		o.reset()
	}()
	c.state.Store(stateWrite)
	vec := consume(iov, 0)
	for len(vec) > 0 {
		n, err := l.writev(c.ev.fd, vec)
		if n > 0 {
			l.hot.bytesWritten.Add(uint64(n))
			vec = consume(vec, n)
			continue
		}
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			l.hold(c, vec)
			return true
		default:
			c.logErr(fmt.Errorf("protocol: write replies: %w", err))
			l.close(c)
			return false
		}
	}
	return true
}

// The loop's sockets are non-blocking, so their reads and writes are made
// as raw system calls: the runtime does not hand the loop's processor to
// another thread around them, as it may for a call that might block.

// rawRead is read(2) on a non-blocking descriptor.
func rawRead(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawWrite is write(2) on a non-blocking descriptor.
func rawWrite(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// writev writes the first IOV_MAX (1024) slices of vec with one writev(2),
// or one write(2) when there is one slice.
func (l *loop) writev(fd int, vec [][]byte) (int, error) {
	if len(vec) == 1 {
		return rawWrite(fd, vec[0])
	}
	iv := l.iovecs[:0]
	for _, b := range vec[:min(len(vec), 1024)] {
		if len(b) > 0 {
			v := unix.Iovec{Base: &b[0]}
			v.SetLen(len(b))
			iv = append(iv, v)
		}
	}
	l.iovecs = iv
	if len(iv) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iv[0])), uintptr(len(iv)))
	clear(iv) // no pointers kept into the round's batch
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// consume drops the first n bytes of vec.
func consume(vec [][]byte, n int) [][]byte {
	for n > 0 && len(vec) > 0 {
		if n < len(vec[0]) {
			vec[0] = vec[0][n:]
			return vec
		}
		n -= len(vec[0])
		vec = vec[1:]
	}
	for len(vec) > 0 && len(vec[0]) == 0 {
		vec = vec[1:]
	}
	return vec
}

// hold copies the unsent replies vec to c's held replies and watches c
// for writability only (backpressure: c is not read meanwhile).
func (l *loop) hold(c *conn, vec [][]byte) {
	size := 0
	for _, b := range vec {
		size += len(b)
	}
	h := c.ev.held[:0]
	if cap(h) < size {
		h = make([]byte, 0, size)
	}
	for _, b := range vec {
		h = append(h, b...)
	}
	c.ev.held, c.ev.heldOff = h, 0
	l.s.holdReplies(int64(size))
	l.watch(c, unix.EPOLLOUT)
}

// flush sends what it can of c's held replies; once all are sent it
// gives their memory back and serves c again.
func (l *loop) flush(c *conn) {
	for c.ev.heldOff < len(c.ev.held) {
		n, err := rawWrite(c.ev.fd, c.ev.held[c.ev.heldOff:])
		if n > 0 {
			c.ev.heldOff += n
			l.hot.bytesWritten.Add(uint64(n))
			l.s.holdReplies(-int64(n))
			continue
		}
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return
		default:
			c.logErr(fmt.Errorf("protocol: write replies: %w", err))
			l.close(c)
			return
		}
	}
	l.dropHeld(c)
	if c.ev.closeAft || l.s.closing.Load() {
		l.close(c)
		return
	}
	l.watch(c, unix.EPOLLIN|unix.EPOLLRDHUP)
	if c.ev.st == psFull {
		l.queue(c)
	} else {
		c.setReadState()
	}
}

// dropHeld forgets c's held replies, returning their count to the budget
// and their memory unless it is small.
func (l *loop) dropHeld(c *conn) {
	if rest := len(c.ev.held) - c.ev.heldOff; rest > 0 {
		l.s.holdReplies(-int64(rest))
	}
	c.ev.held, c.ev.heldOff = c.ev.held[:0], 0
	if cap(c.ev.held) > readBufSize {
		c.ev.held = nil
	}
}

// watch sets the events epoll reports for c.
func (l *loop) watch(c *conn, events uint32) {
	if l.ringWait {
		l.uwatch(c, events)
		return
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(c.ev.fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.ev.fd, &ev); err != nil {
		l.s.log.Warn("protocol: epoll_ctl mod", "err", err)
		l.close(c)
	}
}
