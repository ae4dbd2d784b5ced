package protocol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// rejectTimeout bounds the write of the refusal sent to a connection over
// MaxConns.
const rejectTimeout = time.Second

// Server serves memcached clients (text, meta and binary protocols) over
// stream connections and runs their requests on a kv.Cache. Its methods
// are safe for concurrent use.
type Server struct {
	cache kv.Cache
	admin kv.Admin // the cache's administration, or nil
	cfg   Config
	log   *slog.Logger
	start time.Time
	slabs []int // default slab class sizes, for me when the cache gives no class

	stats     serverStats
	verbosity atomic.Uint32
	closing   atomic.Bool
	pending   atomic.Int64                   // read-buffer bytes connections hold beyond their first readBufSize
	held      atomic.Int64                   // bytes of replies not yet taken by their clients (budget.go)
	heldHigh  atomic.Bool                    // held exceeded half of MaxReplyBytes since it was last zero
	gaveBack  atomic.Int64                   // unix nanoseconds of the last giveBack
	backLater atomic.Bool                    // a giveBack is scheduled for when giveBackEvery has passed
	trimGen   atomic.Uint64                  // giveBacks so far: each asks the loops to drop their large round buffers
	trimAck   atomic.Pointer[chan struct{}]  // where loops acknowledge a trim (trimLoops)
	hotSets   atomic.Pointer[[]*hotCounters] // the event loops' counter sets (Server.sum), once they run
	hitEst    atomic.Int64                   // recent bytes per get hit, 0 when small (noteHits)
	nextID    atomic.Int64                   // ids of connections without a file descriptor (net.Pipe)
	fdWarn    rateLimit                      // "out of file descriptors" log lines

	loops     []*loop // event loops (loop_linux.go); none: a goroutine per connection
	loopsOnce sync.Once
	nextLoop  atomic.Uint64

	mu        sync.Mutex
	listeners map[net.Listener]listenerInfo
	conns     map[*conn]struct{}
	wg        sync.WaitGroup // connection goroutines
}

// NewServer returns a Server that runs requests on c, configured by cfg
// (zero fields take their defaults). It starts nothing; cost: O(1).
func NewServer(c kv.Cache, cfg Config) *Server {
	cfg = cfg.withDefaults()
	admin, _ := c.(kv.Admin)
	return &Server{
		cache:     c,
		admin:     admin,
		cfg:       cfg,
		log:       cfg.Logger,
		start:     time.Now(),
		slabs:     slabClasses(cfg.ItemSizeMax),
		listeners: make(map[net.Listener]listenerInfo),
		conns:     make(map[*conn]struct{}),
	}
}

// Serve accepts connections on ln and serves them: on Linux by the
// server's event loops (Config.Loops, started by the first Serve), each
// connection owned by one loop that batches the requests of all its
// connections; elsewhere, or with Config.Loops negative, each on its own
// goroutine. A connection has a 16 KiB read buffer, grown only for large
// requests. It returns nil
// after Shutdown, or the error that stopped Accept. Temporary accept errors
// are retried with a growing delay; running out of file descriptors is
// answered as memcached answers a connection over its limit (see
// acceptOverLimit). Serve closes ln when it returns; it may run on several
// listeners.
func (s *Server) Serve(ln net.Listener) error {
	if !s.addListener(ln) {
		ln.Close()
		return nil
	}
	defer s.removeListener(ln)
	if s.cfg.Loops > 0 {
		s.startLoops()
	}
	spare := openSpareFD()
	defer spare.close()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return nil
			}
			if isFDExhausted(err) && s.acceptOverLimit(ln, spare) {
				continue
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				if s.fdWarn.allow(time.Now()) {
					s.log.Warn("protocol: accept failed; retrying", "err", err, "delay", delay)
				}
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("protocol: accept: %w", err)
		}
		delay = 0
		c, ok := s.register(nc)
		if !ok {
			go s.reject(nc)
			continue
		}
		if s.adopt(c) {
			continue
		}
		go func() {
			defer s.unregister(c)
			c.serve()
		}()
	}
}

// ServeConn serves one connection on the calling goroutine until it
// closes, then closes it; it counts against MaxConns like an accepted one
// (over the limit it is refused as Serve refuses).
func (s *Server) ServeConn(nc net.Conn) {
	c, ok := s.register(nc)
	if !ok {
		s.reject(nc)
		return
	}
	defer s.unregister(c)
	c.serve()
}

// Shutdown stops accepting connections and ends every connection: a
// connection waiting for requests closes at once; one running a batch
// finishes it and has ShutdownGrace to write its replies (a client that
// does not read them is dropped then), after which every connection still
// open is closed. It returns nil once all connection goroutines have
// ended, or ctx's error if ctx ends first (the connections are closed
// either way).
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	now := time.Now()
	s.mu.Lock()
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		if c.nc == nil {
			continue // an event loop's: the loop ends it
		}
		c.nc.SetReadDeadline(now) // wake connections waiting for requests
		c.nc.SetWriteDeadline(now.Add(s.cfg.ShutdownGrace))
	}
	s.mu.Unlock()
	s.wakeLoops()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	grace := time.NewTimer(s.cfg.ShutdownGrace + 50*time.Millisecond)
	defer grace.Stop()
	select {
	case <-done:
		return nil
	case <-grace.C:
	case <-ctx.Done():
	}
	// Connections still open are stuck in a write to a client that does
	// not read, or in a batch: close them under it.
	s.closeAll()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("protocol: shutdown: %w", ctx.Err())
	}
}

// closeAll closes every connection's socket.
func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.nc == nil {
			shutdownSocket(c) // an event loop's: it closes it
			continue
		}
		c.nc.Close()
	}
}

func (s *Server) addListener(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	s.listeners[ln] = newListenerInfo(ln)
	s.stats.listening.Add(1)
	s.stats.listenTotal.Add(1)
	s.stats.listenEver.Add(1)
	return true
}

func (s *Server) removeListener(ln net.Listener) {
	s.mu.Lock()
	delete(s.listeners, ln)
	s.stats.listening.Add(-1)
	s.mu.Unlock()
	ln.Close()
}

// register admits a connection unless the server is at MaxConns or shutting
// down.
func (s *Server) register(nc net.Conn) (*conn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() || len(s.conns) >= s.cfg.MaxConns {
		return nil, false
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.stats.currConns.Add(1)
	s.stats.totalConns.Add(1)
	s.stats.peakConns.Store(max(s.stats.peakConns.Load(), int64(len(s.conns))))
	return c, true
}

func (s *Server) unregister(c *conn) { s.unregisterThen(c, nil) }

// unregisterThen forgets c, runs then (if not nil) and counts c as gone.
func (s *Server) unregisterThen(c *conn, then func()) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if then != nil {
		then()
	}
	s.stats.currConns.Add(-1)
	s.wg.Done()
}

// reject refuses a connection as memcached does at its connection limit:
// an error line, then close. During shutdown it just closes.
func (s *Server) reject(nc net.Conn) {
	defer nc.Close()
	if s.closing.Load() {
		return
	}
	s.stats.rejected.Add(1)
	nc.SetWriteDeadline(time.Now().Add(rejectTimeout))
	n, _ := nc.Write([]byte(replyTooManyConns))
	s.stats.hot.bytesWritten.Add(uint64(n))
}
