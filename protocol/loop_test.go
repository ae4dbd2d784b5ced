package protocol

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestEventLoopsRunTheTables runs the protocol's request tables and
// connection tests over TCP connections served by event loops (where the
// platform has them) instead of net.Pipe connections on goroutines. The
// tests that count a connection's batches are left out: a loop's
// connection starts at one op per round (slow start, see adapt), and its
// rounds share batches with the loop's other connections. The tables run
// with a round's connections in one batch and in groups of two
// (Config.RoundConns), and in groups of four with loops that block in
// epoll_wait (Config.BlockingWait), with and without polling first
// (Config.SpinWait); with io_uring's reads and writes after epoll's
// waits (Config.LoopIO "uring"), parking, blocking and spinning; and
// waiting on io_uring too ("uringpoll") in one batch and in groups of two
// and of one.
func TestEventLoopsRunTheTables(t *testing.T) {
	if !loopsAvailable {
		t.Skip("no event loops on this platform")
	}
	overLoops = true
	defer func() { overLoops, loopRoundConns, loopBlocking, loopSpin, loopIO = false, 0, false, 0, "" }()
	for _, c := range []struct {
		roundConns int
		blocking   bool
		spin       time.Duration
		io         string
	}{
		{0, false, 0, ""}, {2, false, 0, ""}, {4, true, 0, ""}, {4, true, 200 * time.Microsecond, ""}, {0, false, 200 * time.Microsecond, ""},
		{0, false, 0, LoopIOUringPoll}, {2, false, 0, LoopIOUringPoll}, {1, false, 0, LoopIOUringPoll},
		{0, false, 0, LoopIOUring}, {4, true, 0, LoopIOUring}, {2, false, 200 * time.Microsecond, LoopIOUring},
	} {
		loopRoundConns, loopBlocking, loopSpin, loopIO = c.roundConns, c.blocking, c.spin, c.io
		name := fmt.Sprintf("round-conns-%d", c.roundConns)
		if c.io != "" {
			name = c.io + "-" + name
		}
		if c.blocking {
			name += "-blocking-wait"
		}
		if c.spin > 0 {
			name += "-spin-" + c.spin.String()
		}
		t.Run(name, runTheTables)
	}
}

func runTheTables(t *testing.T) {
	for name, f := range map[string]func(*testing.T){
		"HalfSentRequestWaitsWithoutSpinning": TestHalfSentRequestWaitsWithoutSpinning,
		"OverlongLinesClose":                  TestOverlongLinesClose,
		"TooLargeValuesAreNotBuffered":        TestTooLargeValuesAreNotBuffered,
		"HugeBinaryLengthsAllocateNothing":    TestHugeBinaryLengthsAllocateNothing,
		"BinaryKeyLengthWaitsForTheKey":       TestBinaryKeyLengthWaitsForTheKey,
		"Garbage":                             TestGarbage,
		"PanicClosesOnlyItsConnection":        TestPanicClosesOnlyItsConnection,
		"FailingCacheClosesTheConnection":     TestFailingCacheClosesTheConnection,
		"BinaryProtocol":                      TestBinaryProtocol,
		"BinaryProtocolErrorsClose":           TestBinaryProtocolErrorsClose,
		"BinaryStats":                         TestBinaryStats,
		"MetaProtocol":                        TestMetaProtocol,
		"MetaAges":                            TestMetaAges,
		"ConcurrentConnections":               TestConcurrentConnections,
		"TextProtocol":                        TestTextProtocol,
		"TextExpiry":                          TestTextExpiry,
		"TextQuitClosesAfterEarlierReplies":   TestTextQuitClosesAfterEarlierReplies,
		"TextStats":                           TestTextStats,
	} {
		t.Run(name, f)
	}
}

// TestNonReadingClientsHoldBoundedReplies has 8 clients of one event loop
// send 2000 gets of a 100 KB value each and never read. The loop stops
// reading each once its socket takes no more, so the replies it holds
// stay within Config.MaxReplyBytes plus, per such client, MaxBatchBytes
// and one value; another client of the same loop is served meanwhile, and
// the held replies go back to zero once the clients close.
func TestNonReadingClientsHoldBoundedReplies(t *testing.T) {
	if !loopsAvailable {
		t.Skip("no event loops on this platform")
	}
	for _, io := range []string{LoopIOEpoll, LoopIOUringPoll, LoopIOUring} {
		t.Run(io, func(t *testing.T) { nonReadingClientsHoldBoundedReplies(t, io) })
	}
}

func nonReadingClientsHoldBoundedReplies(t *testing.T, io string) {
	const clients, size, budget = 8, 100 << 10, 1 << 20
	s := newTestServer(t, Config{Loops: 1, MaxReplyBytes: budget, LoopIO: io})
	addr, _ := serve(t, s.Server)
	c := dial(t, addr)
	value := strings.Repeat("v", size)
	if got := textExchange(t, c, fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", size, value)); got != "STORED\r\n" {
		t.Fatalf("set big: %q", got)
	}
	req := []byte(strings.Repeat("get big\r\n", 2000))
	var slow []net.Conn
	for range clients {
		nc := dial(t, addr)
		slow = append(slow, nc)
		go nc.Write(req)
	}
	waitFor(t, "replies to be held", func() bool { return s.held.Load() > 0 })
	time.Sleep(200 * time.Millisecond) // let the loop fill every socket
	bound := int64(budget + clients*(s.cfg.MaxBatchBytes+size+64))
	t.Logf("%d bytes held for %d clients (bound %d)", s.held.Load(), clients, bound)
	if h := s.held.Load(); h > bound {
		t.Errorf("%d bytes of replies held for %d clients that do not read, over %d", h, clients, bound)
	}
	start := time.Now()
	for range 20 {
		if got := textExchange(t, c, "set a 0 0 1\r\nx\r\nget a\r\n"); got != "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n" {
			t.Fatalf("the other client got %q", got)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the other client of the loop took %v next to clients that do not read", d)
	}
	for _, nc := range slow {
		nc.Close()
	}
	waitFor(t, "the held replies to be dropped", func() bool { return s.held.Load() == 0 })
}
