//go:build linux

package protocol

// How an event loop waits for its descriptors: block in epoll_wait, park
// in the Go runtime's poller, or poll first (Config.BlockingWait,
// Config.SpinWait).

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newLoop creates an event loop's epoll and eventfd descriptors.
func newLoop(s *Server) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("protocol: epoll_create1: %w", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("protocol: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return nil, fmt.Errorf("protocol: epoll_ctl: %w", err)
	}
	l := &loop{
		s:      s,
		epfd:   epfd,
		wakefd: wfd,
		conns:  make(map[int]*conn),
		events: make([]unix.EpollEvent, 256),
		stages: stageTimer{clock: s.cfg.Stages},
	}
	if s.cfg.LoopIO == LoopIOUringPoll || s.cfg.LoopIO == LoopIOUring {
		l.ringWait = s.cfg.LoopIO == LoopIOUringPoll
		if l.ring, err = newUring(l.ringWait); err != nil {
			l.ringErr = err // logged by startLoops; the loop uses epoll
			l.ringWait = false
		}
	}
	if l.ringWait {
		return l, nil // waits in io_uring_enter
	}
	if s.cfg.BlockingWait {
		return l, nil // prc nil: wait blocks in epoll_wait
	}
	if unix.SetNonblock(epfd, true) == nil {
		f := os.NewFile(uintptr(epfd), "epoll")
		if rc, err := f.SyscallConn(); err == nil && f.SetReadDeadline(time.Time{}) == nil {
			l.pf, l.prc = f, rc // pollable: os.File owns epfd now
		} else {
			unix.SetNonblock(epfd, false)
			l.pf = f // owns epfd; not pollable: wait blocks in epoll_wait
		}
	}
	return l, nil
}

// wait returns the ready events, waiting up to timeout milliseconds (-1:
// no limit, 0: none). When nothing is ready it parks the loop's goroutine
// in the Go runtime's poller, where the epoll descriptor is registered
// (it is readable when one of its descriptors has an event), rather than
// blocking in epoll_wait: a goroutine blocked in a system call keeps its
// processor until the runtime's monitor takes it back (20 µs and more),
// and with one loop per processor the engine's scheduler goroutine and
// the loops it wakes would wait for that. Cost: one non-blocking
// epoll_wait when events are ready (the poller's Read tries it first), two
// and a park when none are.
func (l *loop) wait(timeout int) (int, error) {
	if timeout == 0 || l.prc == nil {
		return unix.EpollWait(l.epfd, l.events, timeout)
	}
	var n int
	var err error
	switch {
	case timeout > 0:
		l.pf.SetReadDeadline(time.Now().Add(time.Duration(timeout) * time.Millisecond))
		l.deadline = true
	case l.deadline:
		l.pf.SetReadDeadline(time.Time{})
		l.deadline = false
	}
	rerr := l.prc.Read(func(uintptr) bool {
		n, err = unix.EpollWait(l.epfd, l.events, 0)
		return n != 0 || (err != nil && err != unix.EINTR)
	})
	if rerr != nil && !errors.Is(rerr, os.ErrDeadlineExceeded) {
		return 0, rerr
	}
	return n, err
}

// spin polls the loop's descriptors without waiting until one has an
// event or d has passed since the start of the loop's last round (l.now),
// yielding the loop's processor between polls (Config.SpinWait). It
// returns 0 events when d passed with none. Cost: one non-blocking
// epoll_wait (a raw system call: the runtime is not told) and one
// runtime.Gosched per poll.
func (l *loop) spin(d time.Duration) (int, error) {
	until := l.now + int64(d)
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.events[0])),
			uintptr(len(l.events)), 0, 0, 0)
		if e != 0 && e != unix.EINTR {
			return 0, e
		}
		if e == 0 && n > 0 {
			return int(n), nil
		}
		if time.Now().UnixNano() >= until {
			return 0, nil
		}
		runtime.Gosched()
	}
}

// wake interrupts the loop's epoll_wait. Cost: one write system call.
func (l *loop) wake() {
	var one = [8]byte{1}
	unix.Write(l.wakefd, one[:])
}
