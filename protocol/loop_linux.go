//go:build linux

package protocol

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warpkv/warpkv/kv"
)

// An event loop serves many connections on one goroutine, in rounds: it
// waits for readable sockets with epoll (level-triggered), reads every
// readable connection once, parses every complete request of every
// connection into one kv.Batch, runs it with one Cache.Do, then renders
// each connection's replies and writes them with one vectored write.
// Per connection and round that is one read and one write system call,
// and per round one epoll_wait and one batch, however many connections
// take part. A connection whose replies the socket does not take at once
// keeps the rest in its own memory (counted in Server.held) and is
// watched for writability instead of readability: it is neither read nor
// parsed until they are sent, while the loop's other connections go on.

// loopConn is a connection's event-loop state, used by its loop only.
type loopConn struct {
	fd       int
	held     []byte     // replies the socket has not taken yet
	heldOff  int        // held[heldOff:] is still to send
	st       parseState // how the last parse ended
	queued   bool       // in the loop's list of connections to run
	readable bool       // epoll reported input not read yet
	closeAft bool       // close once held is sent
	closed   bool
	// The io_uring mode's (loop_uring_linux.go).
	gen     uint32 // tells this connection's requests from an earlier one's with the same fd
	res     int32  // result of its last recv or sendmsg
	inIO    bool   // a recv of this group is its
	pollOut bool   // a POLLOUT poll is armed
}

// loopMaxOps bounds the ops of one loop round: connections whose turn
// would pass it wait for the next round (they are run first then).
const loopMaxOps = 16 * DefaultMaxBatch

// loopIdleTick is how often a loop looks for idle connections when
// Config.IdleTimeout is set, and for the end of the grace at shutdown.
const loopIdleTick = 100 * time.Millisecond

// loop is one event loop (see above).
type loop struct {
	s      *Server
	epfd   int
	wakefd int // eventfd: new connections or shutdown
	// The epoll descriptor in the Go runtime's poller (nil if it could
	// not be, or with Config.BlockingWait): an idle loop parks there
	// instead of blocking a thread and its processor in epoll_wait (see
	// wait).
	pf       *os.File
	prc      syscall.RawConn
	deadline bool // pf has a read deadline set

	mu       sync.Mutex
	incoming []*conn
	stopped  bool

	conns   map[int]*conn
	run     []*conn // connections to run in the next round
	cur     []*conn
	batch   kv.Batch
	events  []unix.EpollEvent
	iov     [][]byte
	iovecs  []unix.Iovec
	stages  stageTimer
	idleAt  time.Time // next idle scan
	closeAt time.Time // end of the shutdown grace (zero until shutdown)
	trimmed uint64    // the Server's trimGen when the loop last trimmed
	now     int64     // unix nanoseconds at the start of the round: the connections' activity times
	hot     hotCounters
	// keptBuf is the capacity of the round buffer the last trim kept
	// (read by tests while the loop runs).
	keptBuf atomic.Int64

	// The io_uring mode's (Config.LoopIO, loop_uring_linux.go): ring is
	// nil in the epoll mode.
	ring     *uring
	ringErr  error       // why ring is nil though the mode was asked for
	ringWait bool        // LoopIOUringPoll: readiness and waits on the ring too (else on epoll)
	onRing   atomic.Bool // the loop runs on its ring (read by tests)
	gen      uint32
	inflight int // recv and sendmsg requests not completed
	uiov     []unix.Iovec
	uvec     [][]byte
	umsgs    []unix.Msghdr
	usends   []uringSend
}

// loopsAvailable reports whether this platform has event loops.
const loopsAvailable = true

// detach takes a connection's socket away from the Go runtime's poller: it
// duplicates the descriptor (non-blocking) and closes nc. Cost: three
// system calls per connection.
func detach(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, errors.New("protocol: connection has no file descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("protocol: connection descriptor: %w", err)
	}
	fd := -1
	var derr error
	if err := raw.Control(func(f uintptr) {
		fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, fmt.Errorf("protocol: connection descriptor: %w", err)
	}
	if derr != nil {
		return -1, fmt.Errorf("protocol: dup connection descriptor: %w", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("protocol: non-blocking connection descriptor: %w", err)
	}
	nc.Close()
	return fd, nil
}

// adopt hands an admitted connection to an event loop, or reports false
// (changing nothing) when its socket cannot be taken from the runtime
// (net.Pipe, say): the caller serves it on a goroutine then.
func (s *Server) adopt(c *conn) bool {
	if len(s.loops) == 0 {
		return false
	}
	if _, ok := c.nc.(syscall.Conn); !ok {
		return false
	}
	fd, err := detach(c.nc)
	if err != nil {
		s.log.Debug("protocol: serving on a goroutine", "remote", c.raddr, "err", err)
		return false
	}
	s.mu.Lock() // Shutdown and stats conns look at nc and id
	c.nc = nil
	c.id = int64(fd)
	c.ev = loopConn{fd: fd, st: psMore}
	c.opLimit = 1 // slow start (adapt)
	s.mu.Unlock()
	l := s.loops[s.nextLoop.Add(1)%uint64(len(s.loops))]
	l.mu.Lock()
	stopped := l.stopped
	if !stopped {
		l.incoming = append(l.incoming, c)
	}
	l.mu.Unlock()
	if stopped {
		unix.Close(fd)
		s.unregister(c)
		return true
	}
	l.wake()
	return true
}

// startLoops starts Config.Loops event loops, once; it logs and leaves
// none (connections then get goroutines) if they cannot be created.
func (s *Server) startLoops() {
	s.loopsOnce.Do(func() {
		for range s.cfg.Loops {
			l, err := newLoop(s)
			if err != nil {
				s.log.Warn("protocol: no event loops; a goroutine per connection", "err", err)
				for _, l := range s.loops {
					l.free()
				}
				s.loops = nil
				return
			}
			s.loops = append(s.loops, l)
		}
		if len(s.loops) > 0 && s.loops[0].ringErr != nil {
			s.log.Warn("protocol: io_uring unavailable; the event loops use epoll", "err", s.loops[0].ringErr)
		}
		sets := make([]*hotCounters, len(s.loops))
		for i, l := range s.loops {
			sets[i] = &l.hot
		}
		s.hotSets.Store(&sets)
		for _, l := range s.loops {
			go l.loop()
		}
	})
}

// loopKeepBytes is the largest round value buffer a loop keeps when it
// trims: enough for a round of small values.
const loopKeepBytes = 256 << 10

// trim drops the loop's round buffers grown past loopKeepBytes (a round
// of large values grows them up to 4 MB, kept for the next rounds) and
// acknowledges on the server's trim channel.
func (l *loop) trim() {
	if cap(l.batch.Buf) > loopKeepBytes {
		l.batch.Buf = nil
	}
	if cap(l.batch.Ops) > loopMaxOps {
		l.batch.Ops = nil
	}
	l.keptBuf.Store(int64(cap(l.batch.Buf)))
	if ack := l.s.trimAck.Load(); ack != nil {
		select {
		case *ack <- struct{}{}:
		default:
		}
	}
}

// trimLoops asks every event loop to drop its large round buffers and
// waits (up to trimWait) until they have, so that a garbage collection
// after it can return their memory. Cost: a wake-up of each loop.
func (s *Server) trimLoops() {
	if len(s.loops) == 0 {
		return
	}
	ack := make(chan struct{}, len(s.loops))
	s.trimAck.Store(&ack)
	defer s.trimAck.Store(nil)
	s.trimGen.Add(1)
	s.wakeLoops()
	timeout := time.NewTimer(trimWait)
	defer timeout.Stop()
	for range s.loops {
		select {
		case <-ack:
		case <-timeout.C:
			return
		}
	}
}

// trimWait is the longest trimLoops waits for the loops: a loop busy with
// a round trims after it.
const trimWait = 100 * time.Millisecond

// wakeLoops interrupts every loop (at shutdown, and to trim).
func (s *Server) wakeLoops() {
	for _, l := range s.loops {
		l.wake()
	}
}

func (l *loop) free() {
	if l.ring != nil {
		l.ring.enter(l.ring.pending(), 0, false) // the last cancellations: sockets close now
		l.ring.close()
	}
	if l.pf != nil {
		l.pf.Close() // owns epfd
	} else {
		unix.Close(l.epfd)
	}
	unix.Close(l.wakefd)
}

// takeIncoming registers the connections handed to the loop.
func (l *loop) takeIncoming() {
	var b [8]byte
	unix.Read(l.wakefd, b[:])
	l.mu.Lock()
	in := l.incoming
	l.incoming = nil
	l.mu.Unlock()
	for _, c := range in {
		c.batch = &l.batch
		c.hot = &l.hot
		if l.ringWait {
			l.uadd(c)
			l.conns[c.ev.fd] = c
			continue
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.ev.fd)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.ev.fd, &ev); err != nil {
			l.s.log.Warn("protocol: epoll_ctl add", "err", err)
			unix.Close(c.ev.fd)
			l.s.unregister(c)
			continue
		}
		l.conns[c.ev.fd] = c
	}
}

// loop runs rounds until the server has shut down and every connection is
// closed.
func (l *loop) loop() {
	defer l.free()
	if l.ringWait && l.uringStart() {
		l.uringLoop()
		return
	}
	for {
		timeout := l.waitTimeout()
		l.stages.start()
		n, err := 0, error(nil)
		if timeout != 0 && l.s.cfg.SpinWait > 0 {
			n, err = l.spin(l.s.cfg.SpinWait)
		}
		if n == 0 && err == nil {
			n, err = l.wait(timeout)
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.s.log.Error("protocol: epoll_wait", "err", err)
			time.Sleep(10 * time.Millisecond)
		}
		for _, ev := range l.events[:max(n, 0)] {
			fd := int(ev.Fd)
			if fd == l.wakefd {
				l.takeIncoming()
				continue
			}
			c := l.conns[fd]
			if c == nil {
				continue
			}
			if c.ev.heldOff < len(c.ev.held) {
				l.flush(c)
				continue
			}
			c.ev.readable = true
			l.queue(c)
		}
		if l.afterWait() {
			return
		}
	}
}

// waitTimeout is how long the loop may wait for events, in milliseconds:
// not at all when connections are queued, up to loopIdleTick when idle
// connections or the shutdown grace are to be looked at, else without
// limit (-1).
func (l *loop) waitTimeout() int {
	switch {
	case len(l.run) > 0:
		return 0
	case l.s.cfg.IdleTimeout > 0 || !l.closeAt.IsZero():
		return int(loopIdleTick / time.Millisecond)
	}
	return -1
}

// afterWait runs what follows a wait: a trim asked for, the shutdown, a
// round for the queued connections, the idle timeout. It reports true
// when the loop is to end (shut down, no connection left).
func (l *loop) afterWait() bool {
	if g := l.s.trimGen.Load(); g != l.trimmed {
		l.trimmed = g
		l.trim()
	}
	if l.s.closing.Load() && l.shutdown() {
		return true
	}
	if len(l.run) > 0 {
		l.round()
	}
	if l.s.cfg.IdleTimeout > 0 {
		l.closeIdle()
	}
	return false
}

// queue adds c to the next round.
func (l *loop) queue(c *conn) {
	if !c.ev.queued && !c.ev.closed {
		c.ev.queued = true
		l.run = append(l.run, c)
	}
}

// round runs one round for the queued connections: in groups of
// Config.RoundConns connections (all of them when it is zero), each group
// read, parsed, run as one cache batch, rendered and written before the
// next group is read.
func (l *loop) round() {
	l.now = time.Now().UnixNano()
	l.cur, l.run = l.run, l.cur[:0]
	cur := l.cur
	step := l.s.cfg.RoundConns
	if step <= 0 {
		step = len(cur)
	}
	var rest []*conn
	for lo := 0; lo < len(cur); lo += step {
		group := cur[lo:min(lo+step, len(cur))]
		if n := l.group(group); n < len(group) {
			rest = cur[lo+n:] // the round is full: the rest run first next round
			break
		}
	}
	if len(rest) > 0 {
		next := append(rest[:len(rest):len(rest)], l.run...)
		for _, c := range rest {
			c.ev.queued = true
		}
		l.run = append(l.run[:0], next...)
	}
	if cap(l.batch.Buf) > 4<<20 {
		l.batch.Buf = nil
	}
	l.batch.Reset()
	clear(cur)
}

// group reads, parses, runs, renders and writes one group of a round's
// connections, and returns how many of them it ran: all, unless the
// batch reached loopMaxOps.
func (l *loop) group(cur []*conn) int {
	if l.ring != nil {
		l.ureadAll(cur)
	} else {
		for _, c := range cur {
			c.ev.queued = false
			if c.ev.readable && c.ev.st == psMore {
				c.ev.readable = false
				l.read(c)
			}
		}
	}
	l.stages.lap(StageRead, 0)
	l.batch.Reset()
	parsed := 0
	for _, c := range cur {
		if c.ev.closed {
			parsed++
			continue
		}
		if len(l.batch.Ops) >= loopMaxOps {
			break
		}
		l.parse(c)
		parsed++
	}
	l.stages.lap(StageParse, 0)
	ok := true
	if len(l.batch.Ops) > 0 {
		l.hot.batches.Add(1)
		l.hot.ops.Add(uint64(len(l.batch.Ops)))
		ok = l.do()
		l.stages.lap(StageCache, len(l.batch.Ops))
	}
	for _, c := range cur[:parsed] {
		if !c.ev.closed {
			l.render(c, ok)
		}
	}
	l.stages.lap(StageRender, 0)
	if l.ring != nil {
		l.usendAll(cur[:parsed])
	}
	for _, c := range cur[:parsed] {
		if !c.ev.closed {
			l.finish(c)
		}
	}
	l.stages.lap(StageWrite, 0)
	return parsed
}

// do runs the round's batch; false: the cache failed (closed) or panicked,
// and the round's connections are closed.
func (l *loop) do() (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			l.s.stats.panics.Add(1)
			l.s.log.Error("protocol: panic in a cache batch", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			ok = false
		}
	}()
	if err := l.s.cache.Do(&l.batch); err != nil {
		l.s.log.Debug("protocol: cache batch failed", "ops", len(l.batch.Ops), "err", err)
		return false
	}
	return true
}

// read reads what the socket of c holds into its read buffer, made ready
// by prepareRead: one system call. End of input or an error closes c.
func (l *loop) read(c *conn) {
	if c.rend == len(c.rbuf) { // no room: prepareRead makes some (or refuses)
		if err := c.prepareRead(); err != nil {
			c.logErr(err)
			l.close(c)
			return
		}
	}
	for {
		n, err := rawRead(c.ev.fd, c.rbuf[c.rend:])
		switch {
		case n > 0:
			c.rend += n
			l.hot.bytesRead.Add(uint64(n))
			return
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		default: // end of input (n == 0) or a socket error
			l.close(c)
			return
		}
	}
}

// parse parses c's requests into the round's batch. A panic closes c.
func (l *loop) parse(c *conn) {
	defer func() {
		if p := recover(); p != nil {
			l.panicked(c, p)
		}
	}()
	c.beginRound()
	c.ev.st = c.parseRound()
	c.opEnd = len(l.batch.Ops)
}

// render renders c's replies of the round (ok: its batch ran; if not,
// c is closed).
func (l *loop) render(c *conn, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			l.panicked(c, p)
		}
	}()
	if len(c.reqs) > 0 {
		if !ok {
			l.close(c)
			return
		}
		c.state.Store(stateParse)
		c.lastCmd.Store(l.now)
		c.flushCounts()
		c.renderRound()
	}
}

// finish writes c's rendered replies, then readies c for the next round:
// queued again when it has parsed requests left, watched for input when
// it needs more, closed when it asked to be.
func (l *loop) finish(c *conn) {
	defer func() {
		if p := recover(); p != nil {
			l.panicked(c, p)
		}
	}()
	if c.out.len() > 0 && !l.write(c) {
		return
	}
	st := c.ev.st
	c.endRound()
	if st == psClose || c.quit {
		l.closeWhenSent(c)
		return
	}
	if st == psMore {
		if err := c.prepareRead(); err != nil {
			c.logErr(err)
			l.closeWhenSent(c)
			return
		}
	}
	if c.ev.heldOff < len(c.ev.held) {
		return // resumes once they are sent (flush)
	}
	if st == psFull || c.ev.readable {
		l.queue(c)
	}
}

// closeWhenSent closes c now, or once its held replies are sent.
func (l *loop) closeWhenSent(c *conn) {
	if c.ev.heldOff < len(c.ev.held) {
		c.ev.closeAft = true
		return
	}
	l.close(c)
}

// close closes c's socket and forgets it.
func (l *loop) close(c *conn) {
	if c.ev.closed {
		return
	}
	c.ev.closed = true
	l.dropHeld(c)
	if l.ringWait {
		l.ucancel(c)
	}
	delete(l.conns, c.ev.fd)
	c.flushCounts()
	c.release(c.reserved)
	// Forgotten by the server before the descriptor closes, so that
	// Server.closeAll never shuts down a reused descriptor.
	l.s.unregisterThen(c, func() { unix.Close(c.ev.fd) }) // also leaves the epoll set
}

// shutdownSocket ends c's socket both ways, from outside its loop (which
// may be stuck in a batch): its client sees the end, and the loop closes
// it on its next look. The caller holds s.mu.
func shutdownSocket(c *conn) {
	unix.Shutdown(c.ev.fd, unix.SHUT_RDWR)
}

// panicked logs a panic while serving c and closes c.
func (l *loop) panicked(c *conn, p any) {
	l.s.stats.panics.Add(1)
	l.s.log.Error("protocol: panic serving connection", "remote", c.raddr, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	l.close(c)
}

// closeIdle closes the connections whose last command is older than
// Config.IdleTimeout (looked at every loopIdleTick) among those it may
// close, as memcached 1.6.18's idle timeout thread: TCP connections
// waiting for a command (conn.idleCloses), with no replies left to send.
func (l *loop) closeIdle() {
	now := time.Now()
	if now.Before(l.idleAt) {
		return
	}
	l.idleAt = now.Add(loopIdleTick)
	limit := now.Add(-l.s.cfg.IdleTimeout).UnixNano()
	for _, c := range l.conns {
		if c.lastCmd.Load() < limit && !c.ev.queued && c.ev.heldOff >= len(c.ev.held) && c.idleCloses() {
			l.close(c)
		}
	}
}

// shutdown ends the loop's connections at Shutdown: those with no replies
// to send close at once, the others once sent or at the end of
// Config.ShutdownGrace. It reports true when the loop has no connection
// left and has stopped taking new ones.
func (l *loop) shutdown() bool {
	now := time.Now()
	if l.closeAt.IsZero() {
		l.closeAt = now.Add(l.s.cfg.ShutdownGrace)
	}
	// Requests already read are run first: their replies have the grace.
	if len(l.run) > 0 && now.Before(l.closeAt) {
		l.round()
	}
	late := !now.Before(l.closeAt)
	for _, c := range l.conns {
		if late || c.ev.heldOff >= len(c.ev.held) && !c.ev.queued {
			l.close(c)
		}
	}
	if len(l.conns) > 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.incoming) > 0 {
		return false
	}
	l.stopped = true
	return true
}
