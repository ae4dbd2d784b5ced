//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// floorConn is one client connection of a floor loop.
type floorConn struct {
	in   []byte // received bytes not yet answered
	out  []byte // replies the socket has not taken yet
	held bool   // out waits for EPOLLOUT (the socket took part of it)
}

// floorLoop is one event loop of the floor server: its own SO_REUSEPORT
// listener and epoll instance, on a goroutine locked to its thread.
type floorLoop struct {
	ep, lfd int
	conns   []*floorConn // by descriptor
	st      floorState
	events  [256]unix.EpollEvent
}

// serveFloor runs threads floor loops on host:port until the process is
// killed; it returns only if a loop could not start.
func serveFloor(host string, port, threads int) error {
	ip := net.ParseIP(host).To4()
	if ip == nil {
		return fmt.Errorf("bench floor: -l %q: want an IPv4 address", host)
	}
	errs := make(chan error, threads)
	shared := new(floorValue)
	for i := range threads {
		l, err := newFloorLoop([4]byte(ip), port)
		if err != nil {
			return fmt.Errorf("bench floor: loop %d: %w", i, err)
		}
		l.st.shared = shared
		go func() { errs <- l.run() }()
	}
	return <-errs
}

// newFloorLoop opens the loop's listener (SO_REUSEPORT, so every loop
// binds the same port and the kernel spreads connections over them) and
// its epoll instance.
func newFloorLoop(ip [4]byte, port int) (*floorLoop, error) {
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	for _, opt := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT} {
		if err := unix.SetsockoptInt(lfd, unix.SOL_SOCKET, opt, 1); err != nil {
			unix.Close(lfd)
			return nil, fmt.Errorf("setsockopt: %w", err)
		}
	}
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Port: port, Addr: ip}); err != nil {
		unix.Close(lfd)
		return nil, fmt.Errorf("bind port %d: %w", port, err)
	}
	if err := unix.Listen(lfd, 4096); err != nil {
		unix.Close(lfd)
		return nil, fmt.Errorf("listen: %w", err)
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		unix.Close(lfd)
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}); err != nil {
		unix.Close(lfd)
		unix.Close(ep)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	return &floorLoop{ep: ep, lfd: lfd}, nil
}

// run is the loop: wait, then for each ready connection one read, its
// requests answered, one write. A connection whose socket does not take
// its replies whole is watched for writability and not read until they
// are sent.
func (l *floorLoop) run() error {
	runtime.LockOSThread()
	for {
		n, err := unix.EpollWait(l.ep, l.events[:], -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range l.events[:n] {
			fd := int(ev.Fd)
			if fd == l.lfd {
				l.accept()
				continue
			}
			c := l.conns[fd]
			if c == nil {
				continue
			}
			if len(c.out) > 0 {
				if ev.Events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
					l.flush(fd, c)
				}
				continue
			}
			l.serve(fd, c)
		}
	}
}

// accept takes every pending connection.
func (l *floorLoop) accept() {
	for {
		fd, _, err := unix.Accept4(l.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN, or a connection reset before it was taken
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}); err != nil {
			unix.Close(fd)
			continue
		}
		for len(l.conns) <= fd {
			l.conns = append(l.conns, nil)
		}
		l.conns[fd] = &floorConn{in: make([]byte, 0, 4096)}
	}
}

// serve reads what connection fd has, answers its complete requests and
// writes the replies.
func (l *floorLoop) serve(fd int, c *floorConn) {
	if len(c.in) == cap(c.in) {
		c.in = append(c.in, make([]byte, cap(c.in))...)[:len(c.in)]
	}
	n, e := floorSys(unix.SYS_READ, fd, c.in[len(c.in):cap(c.in)])
	if e == unix.EAGAIN {
		return
	}
	if e != 0 || n == 0 {
		l.close(fd)
		return
	}
	c.in = c.in[:len(c.in)+n]
	used, out, quit := floorServe(&l.st, c.in, c.out[:0])
	c.in = c.in[:copy(c.in, c.in[used:])]
	c.out = out
	if len(out) > 0 {
		l.flush(fd, c)
	}
	if quit {
		l.close(fd)
	}
}

// flush writes c's replies; what the socket does not take waits for
// EPOLLOUT, and the connection is not read until it is sent.
func (l *floorLoop) flush(fd int, c *floorConn) {
	n, e := floorSys(unix.SYS_WRITE, fd, c.out)
	if e != 0 && e != unix.EAGAIN {
		l.close(fd)
		return
	}
	c.out = c.out[:copy(c.out, c.out[n:])]
	if held := len(c.out) > 0; held != c.held {
		ev := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
		if held {
			// Writability alone (errors and hang-ups come regardless): a
			// peer that half-closed without reading must not wake the loop
			// again and again.
			ev = unix.EPOLLOUT
		}
		unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: ev, Fd: int32(fd)})
		c.held = held
	}
}

// close drops connection fd.
func (l *floorLoop) close(fd int) {
	unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, fd, nil)
	unix.Close(fd)
	l.conns[fd] = nil
}

// floorSys is read(2) or write(2) on a non-blocking socket as a raw system
// call (the runtime does not hand the loop's processor to another thread
// around it, as memcached's loops do not).
func floorSys(trap uintptr, fd int, b []byte) (int, unix.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}
