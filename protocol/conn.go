package protocol

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/kv"
)

const (
	readBufSize = 16 << 10 // initial read buffer, memcached's READ_BUFFER_SIZE
	maxLineLen  = 2048     // a longer line without a newline closes the connection (memcached)
)

// wire protocol of a connection, fixed by its first byte as in memcached 1.6.
const (
	protoUnknown = iota
	protoText
	protoBinary
)

// parseState is the outcome of parsing at the front of the read buffer.
type parseState uint8

const (
	psDone  parseState = iota // a request was parsed
	psMore                    // the next request is incomplete: read more
	psFull                    // the round is full (or must end): run it, then parse on
	psClose                   // close the connection after this round's replies (memcached's conn_closing)
)

// conn serves one client connection. It is used by a single goroutine.
type conn struct {
	s  *Server
	nc net.Conn

	rbuf       []byte
	rpos, rend int   // unparsed input is rbuf[rpos:rend]
	need       int   // bytes from rpos the incomplete request needs (0: unknown)
	swallow    int64 // bytes of a refused value still to discard
	inValue    bool  // the request waiting for more input waits for its value (memcached's conn_nread)
	tcp        bool  // a TCP connection: the only kind Config.IdleTimeout closes, as memcached
	proto      int
	eof        bool
	quit       bool // close once this round's replies are written
	barrier    bool // end the round after the request just parsed

	batch      *kv.Batch    // the round's batch: own, or its event loop's (shared by the loop's connections)
	hot        *hotCounters // the counters it updates: the server's, or its event loop's
	own        kv.Batch     // the batch of a connection served by its own goroutine
	opBase     int          // this connection's ops of the round are batch.Ops[opBase:opEnd]
	opEnd      int
	reqs       []request
	reqBytes   int // value bytes of this round's store requests
	cont       getCont
	toks       [][]byte
	keys       []byte // base64-decoded keys of this round
	out        output
	counts     [numCmds]uint64
	maxRbuf    int // the read buffer's growth limit
	opLimit    int // ops per round: MaxBatch, lowered while gets return large values
	roundLimit int // ops of this round (beginRound)
	stages     stageTimer
	reserved   int // bytes of the read buffer beyond readBufSize, counted in Server.pending
	slabs      slabCounts

	raddr string   // the client's address, "" when unknown
	peer  string   // the same as stats conns shows it ("tcp:127.0.0.1:5000")
	ev    loopConn // event-loop state (loop.go); unused when served by a goroutine

	id      int64        // file descriptor (stats conns)
	state   atomic.Int32 // stats conns state
	lastCmd atomic.Int64 // unix nanoseconds of the last round that ran requests
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s:       s,
		nc:      nc,
		rbuf:    make([]byte, readBufSize),
		toks:    make([][]byte, 0, maxTokens),
		maxRbuf: max(s.cfg.ItemSizeMax, s.cfg.MaxGetLine) + 64<<10,
		opLimit: s.cfg.MaxBatch,
		stages:  stageTimer{clock: s.cfg.Stages},
		id:      fdOf(nc),
		raddr:   remoteAddr(nc),
		tcp:     isTCP(nc),
		peer:    netAddr(nc.RemoteAddr()),
	}
	c.batch = &c.own
	c.hot = &s.stats.hot
	if c.id < 0 {
		c.id = 1<<20 + s.nextID.Add(1)
	}
	c.lastCmd.Store(time.Now().UnixNano())
	c.state.Store(stateWaiting)
	return c
}

// serve runs the connection until the client leaves, a protocol error or
// Shutdown closes it. A panic is logged and closes only this connection.
func (c *conn) serve() {
	defer func() {
		if p := recover(); p != nil {
			c.s.stats.panics.Add(1)
			c.s.log.Error("protocol: panic serving connection", "remote", c.raddr, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
		c.flushCounts()
		c.release(c.reserved)
		c.nc.Close()
	}()
	c.stages.start()
	for {
		c.beginRound()
		st := c.parseRound()
		c.stages.lap(StageParse, 0)
		if len(c.reqs) > 0 {
			if err := c.execute(); err != nil {
				c.logErr(err)
				return
			}
		}
		if st == psClose || c.quit {
			return
		}
		c.endRound()
		if st == psMore {
			if err := c.fill(); err != nil {
				c.logErr(err)
				return
			}
			c.stages.lap(StageRead, 0)
		}
	}
}

// parseRound parses requests from the read buffer into the round's batch
// until the input runs out, the round is full or the connection must close.
func (c *conn) parseRound() parseState {
	for {
		if c.full() {
			return psFull
		}
		if c.swallow > 0 {
			k := int(min(c.swallow, int64(c.rend-c.rpos)))
			c.rpos += k
			c.swallow -= int64(k)
			if c.swallow > 0 {
				c.need = 0
				return psMore
			}
			continue
		}
		c.inValue = false
		if c.rpos == c.rend {
			c.need = 0
			return psMore
		}
		if c.proto == protoUnknown {
			c.proto = protoText
			if c.rbuf[c.rpos] == binReqMagic {
				c.proto = protoBinary
			}
		}
		buf := c.rbuf[c.rpos:c.rend]
		var n int
		var st parseState
		if c.proto == protoBinary {
			n, st = c.parseBinary(buf)
		} else {
			n, st = c.parseText(buf)
		}
		c.rpos += n
		switch {
		case st != psDone:
			return st
		case c.quit || c.barrier:
			return psFull
		}
	}
}

// idleCloses reports whether Config.IdleTimeout may close the connection
// while it waits for input, as memcached 1.6.18's idle timeout thread: a
// TCP connection waiting for a command (conn_new_cmd, conn_read: idle, or
// with part of a command line or binary header), not one receiving a
// value (conn_nread) or discarding one (conn_swallow), nor a unix
// socket's. Its timeout counts from the last command (lastCmd), not the
// last byte.
func (c *conn) idleCloses() bool { return c.tcp && c.swallow == 0 && !c.inValue }

// isTCP reports whether nc is a TCP connection.
func isTCP(nc net.Conn) bool {
	_, ok := nc.(*net.TCPConn)
	return ok
}

// full reports whether the round has reached its bounds.
func (c *conn) full() bool {
	cfg := &c.s.cfg
	return len(c.reqs) >= cfg.MaxBatch || c.ops() >= c.limit() || c.reqBytes >= cfg.MaxBatchBytes
}

// adapt sets the next round's op limit from this round's hits, so that a
// round's values stay near MaxBatchBytes: a client fetching large values
// gets fewer ops per round (at least one), which bounds the memory a
// connection holds while its replies are written. The limit doubles
// (up to MaxBatch) after a round that used at least half of it with hits
// under half of MaxBatchBytes; an event loop's connection starts at one op
// (slow start), so that a client that sends a long pipeline of gets of
// large values and never reads holds one value, not MaxBatch of them,
// before the server has seen their size.
func (c *conn) adapt() {
	gets, hitBytes := 0, 0
	for i := c.opBase; i < c.opEnd; i++ {
		if op := &c.batch.Ops[i]; op.Kind == kv.Get {
			gets++
			hitBytes += len(op.Result.Value)
		}
	}
	limit := c.s.cfg.MaxBatchBytes
	if gets > 0 {
		c.s.noteHits(hitBytes / gets)
	}
	switch {
	case hitBytes > limit:
		c.opLimit = max(1, gets*limit/hitBytes)
	case hitBytes <= limit/2 && c.opLimit < c.s.cfg.MaxBatch && 2*(c.opEnd-c.opBase) >= c.opLimit:
		c.opLimit = min(c.s.cfg.MaxBatch, 2*c.opLimit)
	}
}

// execute runs the round's batch, then renders and writes the replies.
func (c *conn) execute() error {
	c.state.Store(stateParse)
	c.lastCmd.Store(time.Now().UnixNano())
	c.flushCounts()
	c.opEnd = len(c.batch.Ops)
	if len(c.batch.Ops) > 0 {
		c.hot.batches.Add(1)
		c.hot.ops.Add(uint64(len(c.batch.Ops)))
		if err := c.s.cache.Do(c.batch); err != nil {
			return fmt.Errorf("protocol: cache batch of %d ops: %w", len(c.batch.Ops), err)
		}
		c.stages.lap(StageCache, len(c.batch.Ops))
	}
	c.renderRound()
	c.stages.lap(StageRender, 0)
	if c.out.len() == 0 {
		return nil
	}
	defer c.stages.lap(StageWrite, 0)
	// No idle timeout while writing: memcached's leaves conn_mwrite alone.
	c.state.Store(stateWrite)
	size := int64(c.out.len())
	c.s.holdReplies(size) // a client that does not read holds them here
	n, err := c.out.writeTo(c.nc)
	c.s.holdReplies(-size)
	c.hot.bytesWritten.Add(uint64(n))
	if err != nil {
		return fmt.Errorf("protocol: write replies: %w", err)
	}
	return nil
}

// renderRound adapts the op limit to the round's hits, counts its results
// and renders its replies into c.out, once the round's batch has run.
func (c *conn) renderRound() {
	if c.opEnd > c.opBase {
		c.adapt()
		c.countResults()
	}
	now := c.s.cache.Now()
	for i := range c.reqs {
		c.render(&c.reqs[i], now)
	}
}

// ops returns the number of ops this connection has put in the round's
// batch.
func (c *conn) ops() int { return len(c.batch.Ops) - c.opBase }

// limit returns the most ops the connection may put in this round (set by
// beginRound).
func (c *conn) limit() int { return c.roundLimit }

// beginRound starts a round whose ops go to c.batch from its current end.
// The round's op limit is the connection's adaptive one, lowered to what
// MaxBatchBytes allows at the server's recent bytes per get (so that a
// new connection fetching large values holds about MaxBatchBytes from its
// first round), and one while the replies held for clients that do not
// read exceed Config.MaxReplyBytes. Cost: two atomic loads.
func (c *conn) beginRound() {
	c.opBase = len(c.batch.Ops)
	c.opEnd = c.opBase
	lim := c.opLimit
	if est := c.s.hitEst.Load(); est > 0 {
		lim = min(lim, max(1, c.s.cfg.MaxBatchBytes/int(est)))
	}
	if c.s.held.Load() > c.s.cfg.MaxReplyBytes {
		lim = 1
	}
	c.roundLimit = lim
}

// endRound empties the round's state, keeping its memory unless it grew
// large.
func (c *conn) endRound() {
	const keep = 1 << 20
	c.flushCounts()
	if c.batch == &c.own {
		if cap(c.batch.Buf) > keep {
			c.batch.Buf = nil
		}
		c.batch.Reset()
	}
	if cap(c.keys) > keep {
		c.keys = nil
	}
	c.opBase, c.opEnd = 0, 0
	clear(c.reqs)
	c.reqs = c.reqs[:0]
	c.keys = c.keys[:0]
	c.reqBytes = 0
	c.barrier = false
}

// fill reads more input, first moving unparsed bytes to the front of the
// read buffer and growing it when the pending request needs more room
// (prepareRead).
func (c *conn) fill() error {
	if err := c.prepareRead(); err != nil {
		return err
	}
	if d := c.s.cfg.IdleTimeout; d > 0 {
		var deadline time.Time // none while a value comes, nor on a unix socket
		if c.idleCloses() {
			deadline = time.Unix(0, c.lastCmd.Load()).Add(d)
		}
		c.nc.SetReadDeadline(deadline)
	}
	if c.s.closing.Load() { // Shutdown may have set a deadline before ours
		return errShutdown
	}
	n, err := c.nc.Read(c.rbuf[c.rend:])
	c.rend += n
	c.hot.bytesRead.Add(uint64(n))
	if err != nil {
		if n > 0 && errors.Is(err, io.EOF) {
			c.eof = true
			return nil
		}
		if c.s.closing.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
			return errShutdown
		}
		return fmt.Errorf("protocol: read request: %w", err)
	}
	return nil
}

// prepareRead makes room at the end of the read buffer for the next read:
// it moves unparsed bytes to the front and grows the buffer when the
// pending request needs more room. Growth beyond readBufSize is reserved
// from the server's pending budget (Config.MaxPendingBytes); a line that
// cannot get it closes the connection (values reserve theirs when parsed,
// see reserveValue). It sets the connection's stats state.
func (c *conn) prepareRead() error {
	if c.eof {
		return io.EOF
	}
	if c.rpos > 0 {
		c.rend = copy(c.rbuf, c.rbuf[c.rpos:c.rend])
		c.rpos = 0
	}
	switch {
	case c.rend == len(c.rbuf):
		if len(c.rbuf) >= c.maxRbuf {
			return fmt.Errorf("protocol: request of over %d bytes", c.maxRbuf)
		}
		size := 2 * len(c.rbuf) // a line without its newline yet
		if c.need > len(c.rbuf) {
			size = c.need // a request of known length: reserved when parsed
		}
		if !c.resize(min(size, c.maxRbuf)) {
			return fmt.Errorf("protocol: a %d-byte request line: %w", size, errPendingFull)
		}
	case len(c.rbuf) > readBufSize && c.rend <= readBufSize/2 && c.need <= readBufSize:
		c.resize(readBufSize) // give back a buffer grown for one large request
	}
	if c.s.closing.Load() {
		return errShutdown
	}
	c.setReadState()
	return nil
}

// setReadState sets the stats conns state of a connection waiting for
// input: swallowing a refused value, reading the rest of a request, or
// waiting for a new one.
func (c *conn) setReadState() {
	switch {
	case c.swallow > 0:
		c.state.Store(stateSwallow)
	case c.need > 0 || c.rend > 0:
		c.state.Store(stateNRead)
	default:
		c.state.Store(stateWaiting)
	}
}

// resize replaces the read buffer with one of size bytes holding the
// unparsed input (which starts at 0), reserving or releasing the growth
// beyond readBufSize in the server's pending budget. It reports false,
// changing nothing, when the budget cannot cover a larger buffer.
func (c *conn) resize(size int) bool {
	extra := max(size-readBufSize, 0)
	if extra > c.reserved && !c.reserve(extra-c.reserved) {
		return false
	}
	if extra < c.reserved {
		c.release(c.reserved - extra)
	}
	nb := make([]byte, size)
	copy(nb, c.rbuf[:c.rend])
	c.rbuf = nb
	return true
}

// reserve takes n bytes of the server's pending budget for this
// connection's read buffer, or reports false when that would exceed
// Config.MaxPendingBytes or Config.PendingBudget refuses them. Cost: one or
// two atomic operations, and the PendingBudget's.
func (c *conn) reserve(n int) bool {
	b := c.s.cfg.PendingBudget
	if c.s.pending.Add(int64(n)) > c.s.cfg.MaxPendingBytes || (b != nil && !b.Reserve(int64(n))) {
		c.s.pending.Add(-int64(n))
		c.s.stats.pendingRefused.Add(1)
		return false
	}
	c.reserved += n
	return true
}

// release returns n reserved bytes to the server's pending budget.
func (c *conn) release(n int) {
	if n > 0 {
		c.s.pending.Add(-int64(n))
		c.reserved -= n
		if b := c.s.cfg.PendingBudget; b != nil {
			b.Release(int64(n))
		}
	}
}

// reserveValue makes sure the read buffer can be grown to hold a request of
// need bytes from the front of the unparsed input: it reports true when
// the buffer is large enough or the growth beyond readBufSize fits the
// server's pending budget (reserved now, the buffer grows in fill). A false
// answer means that half-sent requests of all connections already hold the
// budget: the caller refuses the value, as memcached refuses one it has no
// memory for.
func (c *conn) reserveValue(need int) bool {
	extra := need - readBufSize
	if need <= len(c.rbuf) || extra <= c.reserved {
		return true
	}
	return c.reserve(extra - c.reserved)
}

var errPendingFull = errors.New("the server's budget for partly received requests is in use (Config.MaxPendingBytes)")

var errShutdown = errors.New("protocol: server shutting down")

// logErr logs a connection error worth a line: not a client that left.
func (c *conn) logErr(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, errShutdown), errors.Is(err, net.ErrClosed):
		return
	}
	c.s.log.Debug("protocol: closing connection", "remote", c.raddr, "err", err)
}

func remoteAddr(nc net.Conn) string {
	if a := nc.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

// flushCounts adds the round's command and per-class counts to the
// server's.
func (c *conn) flushCounts() {
	for i, n := range c.counts {
		if n != 0 {
			c.hot.cmds[i].Add(n)
			c.counts[i] = 0
		}
	}
	c.flushSlabCounts()
}

// addReq appends a reply slot to the round.
func (c *conn) addReq(r request) *request {
	c.reqs = append(c.reqs, r)
	return &c.reqs[len(c.reqs)-1]
}

// static adds a request whose reply is fixed text (empty: none).
func (c *conn) static(text string) {
	r := newRequest(rStatic)
	r.text = text
	c.addReq(r)
}

// addOp appends an op to the round's batch and returns its index.
func (c *conn) addOp(op kv.Op) int32 {
	return int32(c.batch.Add(op))
}

// addGet adds a Get of key (with touch, a gat to exptime) to the round's
// batch, writing the op in place in the batch's spare room: a get line's
// keys are most of a multi-get's ops, and building each 240-byte op and
// copying it into the batch was two copies per key.
func (c *conn) addGet(key []byte, touch bool, exptime int64) {
	ops := c.batch.Ops
	n := len(ops)
	if n == cap(ops) {
		c.batch.Add(kv.Op{Kind: kv.Get, Key: key, Touch: touch, Exptime: exptime})
		return
	}
	ops = ops[:n+1]
	op := &ops[n]
	*op = kv.Op{}
	op.Kind, op.Key, op.Touch, op.Exptime = kv.Get, key, touch, exptime
	c.batch.Ops = ops
}

// decodeKey base64-decodes a meta command's key (the b flag) into the
// round's key memory, where it stays valid until the round ends.
func (c *conn) decodeKey(key []byte) ([]byte, bool) {
	if cap(c.keys)-len(c.keys) < len(key) {
		c.keys = make([]byte, 0, max(4096, 2*cap(c.keys), len(key))) // earlier keys keep the old array
	}
	start := len(c.keys)
	dec, ok := base64Decode(c.keys[start:start], key)
	c.keys = c.keys[:start+len(dec)]
	return dec[:len(dec):len(dec)], ok
}

// render writes the reply of r to the round's output.
func (c *conn) render(r *request, now int64) {
	if int(r.kind) < len(renderers) && renderers[r.kind] != nil {
		renderers[r.kind](c, r, now)
	}
}

// renderers are the reply renderers by request kind; those that read no
// clock take the time through noClock.
var renderers = [...]func(c *conn, r *request, now int64){
	rStatic: func(c *conn, r *request, _ int64) { c.out.str(r.text) },
	rGet:    noClock((*conn).renderGet), rStore: noClock((*conn).renderTextResult),
	rDelete: noClock((*conn).renderTextResult), rArith: noClock((*conn).renderTextResult),
	rTouch: noClock((*conn).renderTextResult), rStats: (*conn).renderTextStats,
	rMetaGet: (*conn).renderMetaGet, rMetaSet: noClock((*conn).renderMetaSet),
	rMetaDelete: noClock((*conn).renderMetaDelete), rMetaArith: (*conn).renderMetaArith,
	rMetaDebug: (*conn).renderMetaDebug, rBin: noClock((*conn).renderBinary),
	rBinStats: (*conn).renderBinaryStats, rCacheDump: noClock((*conn).renderCacheDump),
	rMetaDump: noClock((*conn).renderMetaDump),
}

// noClock adapts a renderer that takes no time to the renderers' type.
func noClock(f func(c *conn, r *request)) func(c *conn, r *request, now int64) {
	return func(c *conn, r *request, _ int64) { f(c, r) }
}

// result returns the Result of the op at index i.
func (c *conn) result(i int32) *kv.Result { return &c.batch.Ops[i].Result }

// failed logs an op the cache could not run and returns the reply text.
func (c *conn) failed(res *kv.Result) string {
	c.s.log.Warn("protocol: cache op failed", "status", res.Status.String(), "err", res.Err)
	return "SERVER_ERROR " + res.Status.String()
}
