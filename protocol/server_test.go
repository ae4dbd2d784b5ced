package protocol

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// serve runs s.Serve on a loopback listener and returns its address and
// Serve's result; cleanup shuts the server down. A loopIO set by the test
// (TestServerTestsOnIOUring) is the loops' Config.LoopIO.
func serve(t *testing.T, s *Server) (string, <-chan error) {
	t.Helper()
	if loopIO != "" {
		s.cfg.LoopIO = loopIO
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return ln.Addr().String(), errc
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestServeAndShutdown(t *testing.T) {
	s := newTestServer(t, Config{})
	addr, errc := serve(t, s.Server)
	nc := dial(t, addr)
	if got := textExchange(t, nc, "set a 0 0 1\r\nx\r\nget a\r\n"); got != "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n" {
		t.Fatalf("got %q", got)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-errc; err != nil {
		t.Errorf("Serve returned %v after Shutdown, want nil", err)
	}
	if got := readAll(t, nc); got != "" {
		t.Errorf("idle connection got %q before closing", got)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("listener still accepts after Shutdown")
	}
	if err := s.Serve(&closedListener{}); err != nil {
		t.Errorf("Serve after Shutdown = %v, want nil", err)
	}
}

// closedListener is a listener Serve must not use after Shutdown.
type closedListener struct{ net.Listener }

func (*closedListener) Close() error { return nil }

// blockingCache holds batches holding the key "slow" until released.
type blockingCache struct {
	kv.Cache
	entered, release chan struct{}
}

func (c *blockingCache) Do(b *kv.Batch) error {
	for _, op := range b.Ops {
		if string(op.Key) == "slow" {
			c.entered <- struct{}{}
			<-c.release
		}
	}
	return c.Cache.Do(b)
}

// serveBlocked serves a test server over a blockingCache and returns them
// and a connection whose "get slow" is running, held by the cache until
// its release is closed.
func serveBlocked(t *testing.T) (*testServer, *blockingCache, net.Conn) {
	t.Helper()
	s := newTestServer(t, Config{})
	bc := &blockingCache{Cache: s.model, entered: make(chan struct{}), release: make(chan struct{})}
	s.Server = NewServer(bc, s.cfg)
	addr, _ := serve(t, s.Server)
	nc := dial(t, addr)
	nc.Write([]byte("get slow\r\n"))
	<-bc.entered
	return s, bc, nc
}

func TestShutdownLetsRunningBatchesFinish(t *testing.T) {
	s, bc, nc := serveBlocked(t)
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while a batch was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(bc.release)
	if got := readAll(t, nc); got != "END\r\n" {
		t.Errorf("got %q, want the running batch's reply, then close", got)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestShutdownDeadlineClosesConnections(t *testing.T) {
	s, bc, nc := serveBlocked(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want a deadline error", err)
	}
	readAll(t, nc) // closed by force
	close(bc.release)
}

func TestMaxConns(t *testing.T) {
	s := newTestServer(t, Config{MaxConns: 2})
	addr, _ := serve(t, s.Server)
	a, b := dial(t, addr), dial(t, addr)
	for _, nc := range []net.Conn{a, b} {
		textExchange(t, nc, "version\r\n")
	}
	third := dial(t, addr)
	if got := readAll(t, third); got != "ERROR Too many open connections\r\n" {
		t.Errorf("third connection got %q", got)
	}
	if st := s.Stats(); st.RejectedConns != 1 || st.CurrConns != 2 || st.TotalConns != 2 {
		t.Errorf("stats %+v, want 1 rejected, 2 current, 2 total", st)
	}
	a.Close()
	waitFor(t, "the closed connection to leave", func() bool { return s.Stats().CurrConns == 1 })
	if got := textExchange(t, dial(t, addr), "version\r\n"); got != "VERSION 1.6.18\r\n" {
		t.Errorf("connection after one left got %q", got)
	}
}

func TestFloodOfConnections(t *testing.T) {
	s := newTestServer(t, Config{MaxConns: 8})
	addr, _ := serve(t, s.Server)
	var conns []net.Conn
	for range 40 {
		conns = append(conns, dial(t, addr))
	}
	served, rejected := 0, 0
	for _, nc := range conns {
		nc.Write([]byte("version\r\n"))
		got, closed := readUntil(t, nc, 5*time.Second, func(b []byte) bool { return strings.HasSuffix(string(b), "\r\n") })
		switch {
		case string(got) == "VERSION 1.6.18\r\n" && !closed:
			served++
		case strings.HasPrefix(string(got), "ERROR Too many open connections\r\n"):
			rejected++
		default:
			t.Fatalf("unexpected reply %q", got)
		}
	}
	if served != 8 || rejected != 32 {
		t.Errorf("served %d, rejected %d; want 8, 32", served, rejected)
	}
}

func TestSlowReaderBlocksOnlyItself(t *testing.T) {
	s := newTestServer(t, Config{})
	addr, _ := serve(t, s.Server)
	slow := dial(t, addr)
	value := strings.Repeat("v", 512<<10)
	if got := textExchange(t, slow, "set big 0 0 524288\r\n"+value+"\r\n"); got != "STORED\r\n" {
		t.Fatalf("set big: %q", got)
	}
	// 64 MiB of replies that the slow client never reads.
	go slow.Write([]byte(strings.Repeat("get big\r\n", 128)))
	time.Sleep(50 * time.Millisecond)
	fast := dial(t, addr)
	start := time.Now()
	for range 20 {
		if got := textExchange(t, fast, "set a 0 0 1\r\nx\r\nget a\r\n"); got != "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n" {
			t.Fatalf("fast client got %q", got)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("fast client took %v next to a slow reader", d)
	}
}

func TestIdleTimeout(t *testing.T) {
	s := newTestServer(t, Config{IdleTimeout: 50 * time.Millisecond})
	addr, _ := serve(t, s.Server)
	nc := dial(t, addr)
	if got := textExchange(t, nc, "version\r\n"); got != "VERSION 1.6.18\r\n" {
		t.Fatalf("got %q", got)
	}
	start := time.Now()
	readAll(t, nc)
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Errorf("closed after %v, before the idle timeout", d)
	}
}

func TestStatsCounters(t *testing.T) {
	s := newTestServer(t, Config{})
	nc := s.pipe(t)
	textExchange(t, nc, "set a 0 0 1\r\nx\r\nget a b\r\nmg a v\r\nbogus\r\n")
	waitFor(t, "the reply bytes to be counted", func() bool { return s.Stats().BytesWritten > 0 })
	st := s.Stats()
	for cmd, want := range map[string]uint64{"set": 1, "get": 1, "mg": 2, "error": 1} { // mg: with the sentinel
		if st.Commands[cmd] != want {
			t.Errorf("Commands[%q] = %d, want %d (all: %v)", cmd, st.Commands[cmd], want, st.Commands)
		}
	}
	if st.BytesRead == 0 || st.BytesWritten == 0 || st.Batches != 1 || st.BatchedOps != 5 {
		t.Errorf("stats %+v: want bytes counted, 1 batch of 5 ops", st)
	}
}
