package protocol

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// countingConn counts the reads of the server side of a connection.
type countingConn struct {
	net.Conn
	reads atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

func TestHalfSentRequestWaitsWithoutSpinning(t *testing.T) {
	for _, tc := range []struct{ name, first, rest, want string }{
		{"text line", "set a 0 0 5\r\nhel", "lo\r\nget a\r\n", "STORED\r\nVALUE a 0 5\r\nhello\r\nEND\r\n"},
		{"binary header", string(binReq{op: opSet, key: "a", extras: setExtras(0, 0), value: "hello"}.bytes()[:10]),
			string(binReq{op: opSet, key: "a", extras: setExtras(0, 0), value: "hello"}.bytes()[10:]) + "get a\r\n", "\x81\x01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Config{})
			client, server := net.Pipe()
			cc := &countingConn{Conn: server}
			go s.ServeConn(cc)
			defer client.Close()
			send(client, []byte(tc.first))
			time.Sleep(50 * time.Millisecond)
			if n := cc.reads.Load(); n > 3 {
				t.Errorf("%d reads while the request was incomplete: the connection spins", n)
			}
			send(client, []byte(tc.rest))
			got, _ := readUntil(t, client, 5*time.Second, func(b []byte) bool { return len(b) >= len(tc.want) })
			if !strings.HasPrefix(string(got), tc.want) {
				t.Errorf("got %q, want prefix %q", got, tc.want)
			}
		})
	}
}

func TestOverlongLinesClose(t *testing.T) {
	tests := []struct {
		name, req string
		cfg       Config
		closed    bool
		want      string
	}{
		{"line over 2048 bytes without newline", strings.Repeat("x", 3000), Config{}, true, ""},
		{"earlier replies are written first", "version\r\n" + strings.Repeat("x", 3000), Config{}, true, "VERSION 1.6.18\r\n"},
		{"set line over 2048 bytes", "set a 0 0 1" + strings.Repeat(" ", 3000), Config{}, true, ""},
		{"long get line is allowed", "get " + strings.Repeat("k ", 3000) + "\r\n", Config{}, false, "END\r\n"},
		{"leading spaces before get", strings.Repeat(" ", 101) + "get " + strings.Repeat("k ", 3000), Config{}, true, ""},
		{"get line over MaxGetLine", "get " + strings.Repeat("k ", 3000), Config{MaxGetLine: 4096}, true, ""},
		{"line over 2048 bytes arriving whole", strings.Repeat("x", 4000) + "\r\n", Config{}, false, "ERROR\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, tc.cfg)
			if got := exchange(t, s.pipe(t), tc.req, tc.closed); got != tc.want {
				t.Errorf("got %q, want %q", trunc([]byte(got)), tc.want)
			}
		})
	}
}

// allocDuring returns the bytes allocated while f runs.
func allocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestTooLargeValuesAreNotBuffered(t *testing.T) {
	const size = 32 << 20
	chunk := []byte(strings.Repeat("v", 64<<10))
	tests := []struct {
		name, header, trailer string
		wantPrefix            string
	}{
		{"text set", "set a 0 0 33554432\r\n", "\r\nget a\r\n", "SERVER_ERROR object too large for cache\r\nEND\r\n"},
		{"meta set", "ms a 33554432 T0\r\n", "\r\nmg a\r\n", "SERVER_ERROR object too large for cache\r\nEN\r\n"},
		{"binary set", string(binReq{op: opSet, key: "a", extras: setExtras(0, 0), bodylen: size + 9}.bytes()), "", "\x81\x01\x00\x00\x00\x00\x00\x03"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Config{})
			nc := s.pipe(t)
			var got []byte
			alloc := allocDuring(func() {
				if _, err := nc.Write([]byte(tc.header)); err != nil {
					t.Fatal(err)
				}
				go func() {
					for sent := 0; sent < size; sent += len(chunk) {
						if _, err := nc.Write(chunk); err != nil {
							return
						}
					}
					nc.Write([]byte(tc.trailer))
				}()
				got, _ = readUntil(t, nc, 10*time.Second, func(b []byte) bool { return len(b) >= len(tc.wantPrefix) })
			})
			if !strings.HasPrefix(string(got), tc.wantPrefix) {
				t.Fatalf("got %q, want prefix %q", got, tc.wantPrefix)
			}
			if alloc > size/4 {
				t.Errorf("allocated %d bytes while discarding a %d-byte value", alloc, size)
			}
		})
	}
}

func TestHugeBinaryLengthsAllocateNothing(t *testing.T) {
	s := newTestServer(t, Config{})
	nc := s.pipe(t)
	var res []binRes
	alloc := allocDuring(func() {
		res = binExchange(t, nc,
			binReq{op: opSet, key: "a", extras: setExtras(0, 0), bodylen: 0xffffffff, opaque: 7}, // length -10 as a C int
			binReq{op: opAppend, key: "a", bodylen: 0xfffffff0, opaque: 7})                       // swallows the rest
	})
	if len(res) != 2 || res[0].status != stE2BIG || res[1].status != stE2BIG {
		t.Fatalf("responses %v, want two E2BIG", res)
	}
	if alloc > 1<<20 {
		t.Errorf("allocated %d bytes for two requests announcing 4 GiB bodies", alloc)
	}
}

func TestBinaryKeyLengthWaitsForTheKey(t *testing.T) {
	s := newTestServer(t, Config{})
	nc := s.pipe(t)
	hdr := binReq{op: opGet, key: strings.Repeat("k", 65535), opaque: 7}.bytes()
	send(nc, hdr[:binHdrLen+100])
	time.Sleep(20 * time.Millisecond)
	send(nc, hdr[binHdrLen+100:])
	got, rest, err := parseBinRes([]byte(readAll(t, nc)))
	if err != nil || len(rest) != 0 || len(got) != 1 || got[0].status != stEINVAL {
		t.Fatalf("got %v %q %v, want one EINVAL and close", got, rest, err)
	}
}

func TestGarbage(t *testing.T) {
	tests := []struct {
		name, req string
		closed    bool
		want      string
	}{
		{"binary garbage after a binary request", string(binReq{op: opNoop}.bytes()) + "\x00\x01garbage-garbage-garbage\x00", true, string([]byte{0x81, 0x0a}) + strings.Repeat("\x00", 22)},
		{"control bytes in text", "\x01\x02\x03\r\n\xff\xfe\r\n", false, "ERROR\r\nERROR\r\n"},
		{"0x80 inside a text connection", "version\r\n\x80\x0a\x00\x00\r\n", false, "VERSION 1.6.18\r\nERROR\r\nERROR\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Config{})
			if got := exchange(t, s.pipe(t), tc.req, tc.closed); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			// the server still serves others
			if got := textExchange(t, s.pipe(t), "version\r\n"); got != "VERSION 1.6.18\r\n" {
				t.Errorf("other connection got %q", got)
			}
		})
	}
}

// panicCache panics on the key "boom"; failCache fails every batch.
type panicCache struct{ kv.Cache }

func (c panicCache) Do(b *kv.Batch) error {
	for _, op := range b.Ops {
		if string(op.Key) == "boom" {
			panic("boom")
		}
	}
	return c.Cache.Do(b)
}

type failCache struct{ kv.Cache }

func (failCache) Do(*kv.Batch) error { return errors.New("cache closed") }

func TestPanicClosesOnlyItsConnection(t *testing.T) {
	s := newTestServer(t, Config{})
	s.Server = NewServer(panicCache{s.model}, s.cfg)
	good := s.pipe(t)
	bad := s.pipe(t)
	send(bad, []byte("get boom\r\n"))
	if got := readAll(t, bad); got != "" {
		t.Errorf("panicking connection got %q, want nothing", got)
	}
	if got := textExchange(t, good, "set a 0 0 1\r\nx\r\nget a\r\n"); got != "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("other connection got %q", got)
	}
	waitFor(t, "the panicked connection to leave", func() bool { return s.Stats().CurrConns == 1 })
	if st := s.Stats(); st.Panics != 1 {
		t.Errorf("Panics = %d, want 1", st.Panics)
	}
}

func TestFailingCacheClosesTheConnection(t *testing.T) {
	s := newTestServer(t, Config{})
	s.Server = NewServer(failCache{s.model}, s.cfg)
	nc := s.pipe(t)
	send(nc, []byte("get a\r\n"))
	if got := readAll(t, nc); got != "" {
		t.Errorf("got %q, want the connection closed", got)
	}
}
