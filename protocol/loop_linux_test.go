//go:build linux

package protocol

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLoopsWaitWhereConfigured checks that by default a loop's epoll
// descriptor is in the Go runtime's poller, so that an idle loop parks its
// goroutine instead of holding a processor in epoll_wait, and that with
// Config.BlockingWait it is not (the loop blocks in epoll_wait); both
// serve requests.
func TestLoopsWaitWhereConfigured(t *testing.T) {
	if !loopsAvailable {
		t.Skip("no event loops on this platform")
	}
	for _, blocking := range []bool{false, true} {
		s := newTestServer(t, Config{Loops: 2, BlockingWait: blocking})
		addr, _ := serve(t, s.Server)
		nc := dial(t, addr)
		if got := textExchange(t, nc, "version\r\n"); got != "VERSION 1.6.18\r\n" {
			t.Fatalf("blocking %v: version: %q", blocking, got)
		}
		time.Sleep(20 * time.Millisecond) // the loop waits again, idle
		if got := textExchange(t, nc, "set k 0 0 1\r\nv\r\nget k\r\n"); got != "STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n" {
			t.Fatalf("blocking %v: set and get after an idle wait: %q", blocking, got)
		}
		s.loopsOnce.Do(func() {}) // orders the loops' creation before this read
		if len(s.loops) != 2 {
			t.Fatalf("%d loops, want 2", len(s.loops))
		}
		for i, l := range s.loops {
			if parks := l.prc != nil; parks == blocking {
				t.Errorf("blocking %v: loop %d parks in the runtime's poller: %v", blocking, i, parks)
			}
		}
	}
}

// TestTrimDropsALoopsLargeRoundBuffers gets a value of 1,000,000 bytes through a
// loop, whose round buffer grows to hold it, and checks that trimLoops
// (run when the replies held for slow readers drain) drops that buffer,
// and that the loop serves the value again afterwards.
func TestTrimDropsALoopsLargeRoundBuffers(t *testing.T) {
	s := newTestServer(t, Config{Loops: 1})
	addr, _ := serve(t, s.Server)
	nc := dial(t, addr)
	value := strings.Repeat("v", 1000_000)
	if got := textExchange(t, nc, fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", len(value), value)); got != "STORED\r\n" {
		t.Fatalf("set: %q", got)
	}
	want := fmt.Sprintf("VALUE big 0 %d\r\n%s\r\nEND\r\n", len(value), value)
	if got := textExchange(t, nc, "get big\r\n"); got != want {
		t.Fatalf("get: %d bytes, want %d", len(got), len(want))
	}
	s.loopsOnce.Do(func() {})
	s.trimLoops() // returns once the loop has trimmed
	if n := s.loops[0].keptBuf.Load(); n > loopKeepBytes {
		t.Errorf("round buffer of %d bytes after a trim, want at most %d", n, loopKeepBytes)
	}
	if got := textExchange(t, nc, "get big\r\n"); got != want {
		t.Fatalf("get after the trim: %d bytes, want %d", len(got), len(want))
	}
}

// TestUringLoopsRunOnTheirRings checks that with Config.LoopIO "uring"
// and "uringpoll" every loop has its io_uring (this kernel has it: Linux
// 6.1 and later), waits on it with "uringpoll" only, and serves requests,
// before and after an idle wait.
func TestUringLoopsRunOnTheirRings(t *testing.T) {
	for _, io := range []string{LoopIOUringPoll, LoopIOUring} {
		t.Run(io, func(t *testing.T) { uringLoopsRunOnTheirRings(t, io) })
	}
}

func uringLoopsRunOnTheirRings(t *testing.T, io string) {
	s := newTestServer(t, Config{Loops: 2, LoopIO: io})
	addr, _ := serve(t, s.Server)
	for range 2 { // one connection per loop
		nc := dial(t, addr)
		if got := textExchange(t, nc, "version\r\n"); got != "VERSION 1.6.18\r\n" {
			t.Fatalf("version: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
		if got := textExchange(t, nc, "set k 0 0 1\r\nv\r\nget k\r\n"); got != "STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n" {
			t.Fatalf("set and get after an idle wait: %q", got)
		}
	}
	s.loopsOnce.Do(func() {})
	for i, l := range s.loops {
		if errors.Is(l.ringErr, unix.ENOSYS) || errors.Is(l.ringErr, unix.EPERM) {
			t.Skipf("no io_uring here (the loops serve on epoll): %v", l.ringErr)
		}
		if l.ringErr != nil {
			t.Fatalf("loop %d: %v", i, l.ringErr)
		}
		if io == LoopIOUring && l.ring == nil {
			t.Errorf("loop %d has no ring", i)
		}
		if waits := l.onRing.Load(); waits != (io == LoopIOUringPoll) {
			t.Errorf("loop %d waits on its ring: %v", i, waits)
		}
	}
}

// TestServerTestsOnIOUring runs the tests of Serve's connections (shutdown,
// MaxConns, slow readers, the idle timeout, trims) with the event loops
// on io_uring, both modes (Config.LoopIO); they run on epoll by themselves.
func TestServerTestsOnIOUring(t *testing.T) {
	for _, io := range []string{LoopIOUringPoll, LoopIOUring} {
		loopIO = io
		t.Run(io, serverTests)
	}
	loopIO = ""
}

func serverTests(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"ServeAndShutdown", TestServeAndShutdown},
		{"ShutdownLetsRunningBatchesFinish", TestShutdownLetsRunningBatchesFinish},
		{"ShutdownDeadlineClosesConnections", TestShutdownDeadlineClosesConnections},
		{"MaxConns", TestMaxConns},
		{"FloodOfConnections", TestFloodOfConnections},
		{"SlowReaderBlocksOnlyItself", TestSlowReaderBlocksOnlyItself},
		{"IdleTimeout", TestIdleTimeout},
		{"TrimDropsALoopsLargeRoundBuffers", TestTrimDropsALoopsLargeRoundBuffers},
	} {
		t.Run(c.name, c.f)
	}
}
