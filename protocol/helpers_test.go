package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// testNow is the fake clock's start: a fixed unix time.
const testNow = 1_700_000_000

// fakeClock is a settable clock for kv.NewModel.
type fakeClock struct{ t atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.t.Store(testNow)
	return c
}

func (c *fakeClock) now() int64            { return c.t.Load() }
func (c *fakeClock) advance(seconds int64) { c.t.Add(seconds) }

// discardLogger keeps test output quiet.
var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// testServer is a Server over a fresh kv.Model on a fake clock.
type testServer struct {
	*Server
	model *kv.Model
	clock *fakeClock
	addr  string // Serve's address (loopConn), "" until started
}

func newTestServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	clock := newFakeClock()
	model := kv.NewModel(clock.now)
	if cfg.ItemSizeMax > 0 {
		model.SetItemSizeMax(cfg.ItemSizeMax)
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger
	}
	if cfg.Version == "" {
		cfg.Version = "1.6.18"
	}
	return &testServer{Server: NewServer(model, cfg), model: model, clock: clock}
}

// overLoops makes pipe connect over TCP to the server's event loops
// instead (TestEventLoopsRunTheTables).
var overLoops bool

// loopRoundConns, with overLoops, is the loops' Config.RoundConns.
var loopRoundConns int

// loopBlocking, with overLoops, is the loops' Config.BlockingWait.
var loopBlocking bool

// loopSpin, with overLoops, is the loops' Config.SpinWait.
var loopSpin time.Duration

// loopIO, with overLoops or in serve, is the loops' Config.LoopIO.
var loopIO string

// pipe serves one end of a net.Pipe with ServeConn and returns the client
// end; cleanup closes it and waits for the server side to finish. With
// overLoops it returns a TCP connection served by Serve's event loops.
func (s *testServer) pipe(t testing.TB) net.Conn {
	t.Helper()
	if overLoops {
		return s.loopConn(t)
	}
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeConn(server)
	}()
	t.Cleanup(func() {
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("ServeConn did not return after the client closed")
		}
	})
	return client
}

// loopConn dials the server over TCP, starting Serve on a listener the
// first time (shut down when the test ends).
func (s *testServer) loopConn(t testing.TB) net.Conn {
	t.Helper()
	if s.addr == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := s.Server
		srv.cfg.RoundConns = loopRoundConns
		srv.cfg.BlockingWait = loopBlocking
		srv.cfg.SpinWait = loopSpin
		srv.cfg.LoopIO = loopIO
		go srv.Serve(ln)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
		})
		s.addr = ln.Addr().String()
	}
	nc, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// The request/reply tables also run against a real memcached 1.6, to check
// that their expectations are memcached's: difftest.Memcached starts one
// for the test (and skips it when none is installed, or fails it under
// WARPKV_REQUIRE_MEMCACHED=1).

// dialMemcached connects to the memcached at addr and flushes it.
func dialMemcached(t testing.TB, addr string, binaryProto bool) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial memcached: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	if binaryProto {
		binExchange(t, nc, binReq{op: opFlush})
	} else if got := textExchange(t, nc, "flush_all\r\n"); got != "OK\r\n" {
		t.Fatalf("flush_all: %q", got)
	}
	return nc
}

// send writes b on its own goroutine (net.Pipe is unbuffered: the server
// may answer before it has read everything).
func send(nc net.Conn, b []byte) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := nc.Write(b)
		errc <- err
	}()
	return errc
}

// readUntil reads from nc until done(got) or EOF or the deadline; it returns
// what was read and whether the connection was closed.
func readUntil(t testing.TB, nc net.Conn, timeout time.Duration, done func([]byte) bool) ([]byte, bool) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(timeout))
	defer nc.SetReadDeadline(time.Time{})
	var got []byte
	buf := make([]byte, 64<<10)
	for !done(got) {
		n, err := nc.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
				return got, true
			}
			t.Fatalf("read after %q: %v", trunc(got), err)
		}
	}
	return got, false
}

// The request ending a text exchange, and its reply, which no test request
// produces.
const (
	textSentinel      = "mg exchange-sentinel Oend-of-exchange\r\n"
	textSentinelReply = "EN Oend-of-exchange\r\n"
)

// textExchange sends req followed by a sentinel request and returns the
// replies before the sentinel's.
func textExchange(t testing.TB, nc net.Conn, req string) string {
	t.Helper()
	send(nc, []byte(req+textSentinel))
	got, closed := readUntil(t, nc, 5*time.Second, func(b []byte) bool { return bytes.HasSuffix(b, []byte(textSentinelReply)) })
	if closed {
		t.Fatalf("connection closed; got %q", trunc(got))
	}
	return strings.TrimSuffix(string(got), textSentinelReply)
}

// exchange is textExchange of req, or, when the server must close the
// connection on it (closes), req sent and all read until the close.
func exchange(t testing.TB, nc net.Conn, req string, closes bool) string {
	t.Helper()
	if closes {
		send(nc, []byte(req))
		return readAll(t, nc)
	}
	return textExchange(t, nc, req)
}

// readAll reads until the server closes the connection.
func readAll(t testing.TB, nc net.Conn) string {
	t.Helper()
	got, closed := readUntil(t, nc, 5*time.Second, func([]byte) bool { return false })
	if !closed {
		t.Fatalf("connection not closed; got %q", trunc(got))
	}
	return string(got)
}

func trunc(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// binReq is a binary request for tests.
type binReq struct {
	op      uint8
	key     string
	extras  []byte
	value   string
	cas     uint64
	opaque  uint32
	magic   uint8  // 0: 0x80
	bodylen uint32 // 0: computed
}

func (r binReq) bytes() []byte {
	magic := r.magic
	if magic == 0 {
		magic = binReqMagic
	}
	bodylen := r.bodylen
	if bodylen == 0 {
		bodylen = uint32(len(r.key) + len(r.extras) + len(r.value))
	}
	h := make([]byte, binHdrLen, binHdrLen+len(r.key)+len(r.extras)+len(r.value))
	h[0], h[1] = magic, r.op
	binary.BigEndian.PutUint16(h[2:], uint16(len(r.key)))
	h[4] = uint8(len(r.extras))
	binary.BigEndian.PutUint32(h[8:], bodylen)
	binary.BigEndian.PutUint32(h[12:], r.opaque)
	binary.BigEndian.PutUint64(h[16:], r.cas)
	return append(append(append(h, r.extras...), r.key...), r.value...)
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// setExtras are the extras of set, add and replace.
func setExtras(flags, exptime uint32) []byte { return append(be32(flags), be32(exptime)...) }

// incrExtras are the extras of incr and decr.
func incrExtras(delta, initial uint64, exptime uint32) []byte {
	return append(append(be64(delta), be64(initial)...), be32(exptime)...)
}

// binRes is a decoded binary response.
type binRes struct {
	op     uint8
	status uint16
	extras string
	key    string
	value  string
	opaque uint32
	cas    uint64
}

func (r binRes) String() string {
	return fmt.Sprintf("{op:%#x st:%#x ext:%x key:%q val:%q opq:%#x cas:%d}", r.op, r.status, r.extras, r.key, r.value, r.opaque, r.cas)
}

// parseBinRes decodes consecutive responses; rest is what does not form a
// whole response, err a malformed header.
func parseBinRes(b []byte) (res []binRes, rest []byte, err error) {
	for len(b) >= binHdrLen {
		if b[0] != binResMagic {
			return res, b, fmt.Errorf("bad response magic %#x", b[0])
		}
		keylen := int(binary.BigEndian.Uint16(b[2:]))
		extlen := int(b[4])
		bodylen := int(binary.BigEndian.Uint32(b[8:]))
		if keylen+extlen > bodylen {
			return res, b, fmt.Errorf("response key %d + extras %d > body %d", keylen, extlen, bodylen)
		}
		if len(b) < binHdrLen+bodylen {
			break
		}
		body := b[binHdrLen : binHdrLen+bodylen]
		res = append(res, binRes{
			op: b[1], status: binary.BigEndian.Uint16(b[6:]),
			extras: string(body[:extlen]), key: string(body[extlen : extlen+keylen]), value: string(body[extlen+keylen:]),
			opaque: binary.BigEndian.Uint32(b[12:]), cas: binary.BigEndian.Uint64(b[16:]),
		})
		b = b[binHdrLen+bodylen:]
	}
	return res, b, nil
}

// sentinelOpaque marks the noop that ends a binary exchange.
const sentinelOpaque = 0x5e471e1

// binExchange sends reqs followed by a noop and returns the responses
// before the noop's.
func binExchange(t testing.TB, nc net.Conn, reqs ...binReq) []binRes {
	t.Helper()
	var b []byte
	for _, r := range reqs {
		b = append(b, r.bytes()...)
	}
	b = append(b, binReq{op: opNoop, opaque: sentinelOpaque}.bytes()...)
	send(nc, b)
	var res []binRes
	got, closed := readUntil(t, nc, 5*time.Second, func(b []byte) bool {
		r, _, err := parseBinRes(b)
		if err != nil {
			t.Fatalf("responses %q: %v", trunc(b), err)
		}
		res = r
		return len(r) > 0 && r[len(r)-1].opaque == sentinelOpaque
	})
	if closed {
		t.Fatalf("connection closed; got %v", res)
	}
	_ = got
	return res[:len(res)-1]
}

// countingCache wraps a Cache and counts its batches.
type countingCache struct {
	kv.Cache
	batches, ops atomic.Int64
}

func (c *countingCache) Do(b *kv.Batch) error {
	c.batches.Add(1)
	c.ops.Add(int64(len(b.Ops)))
	return c.Cache.Do(b)
}
