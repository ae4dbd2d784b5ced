package protocol

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memConn is a net.Conn that reads a fixed input, in chunks of varying
// size, then EOF, and records what is written.
type memConn struct {
	in   []byte
	seed uint32
	out  bytes.Buffer
}

func (m *memConn) Read(p []byte) (int, error) {
	if len(m.in) == 0 {
		return 0, io.EOF
	}
	m.seed = m.seed*1664525 + 1013904223
	n := min(len(p), len(m.in), 1+int(m.seed>>24)%97)
	copy(p, m.in[:n])
	m.in = m.in[n:]
	return n, nil
}

func (m *memConn) Write(p []byte) (int, error) {
	if m.out.Len() > 64<<20 {
		return 0, errors.New("memConn: too much output")
	}
	return m.out.Write(p)
}

func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (m *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzServe serves in on a fresh server and returns the replies, failing
// on a recovered panic or an output out of proportion to the input.
func fuzzServe(t *testing.T, in []byte) []byte {
	s := newTestServer(t, Config{ItemSizeMax: 64 << 10, MaxBatch: 16, MaxGetLine: 16 << 10})
	m := &memConn{in: in, seed: uint32(len(in))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeConn(m)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("ServeConn did not finish on %d bytes of input", len(in))
	}
	if p := s.Stats().Panics; p != 0 {
		t.Fatalf("%d panics serving %q", p, trunc(in))
	}
	// The largest reply per input byte is a stats listing per "stats\n".
	if out := m.out.Len(); out > 64<<10+1000*len(in) {
		t.Fatalf("%d bytes of replies to %d bytes of requests", out, len(in))
	}
	return m.out.Bytes()
}

// textReplyWords are the first words of every text and meta reply line.
var textReplyWords = map[string]bool{
	"END": true, "STORED": true, "NOT_STORED": true, "EXISTS": true, "NOT_FOUND": true, "DELETED": true,
	"TOUCHED": true, "OK": true, "ERROR": true, "ERROR:": true, "CLIENT_ERROR": true, "SERVER_ERROR": true,
	"VERSION": true, "STAT": true, "RESET": true, "MN": true, "HD": true, "EN": true, "NF": true, "NS": true,
	"EX": true, "ME": true, "ITEM": true, "BUSY": true, "BADCLASS": true, "NOSPARE": true, "SAME": true,
	"MEMLIMIT_TOO_SMALL": true, "MEMLIMIT_ADJUST_FAILED": true,
}

// checkTextReplies fails unless out is a sequence of well-formed text or
// meta replies.
func checkTextReplies(t *testing.T, in, out []byte) {
	for len(out) > 0 {
		i := bytes.Index(out, []byte("\r\n"))
		if i < 0 {
			t.Fatalf("reply without CRLF %q to %q", trunc(out), trunc(in))
		}
		line := string(out[:i])
		out = out[i+2:]
		f := strings.Split(line, " ")
		n := -1
		switch {
		case f[0] == "VALUE" && (len(f) == 4 || len(f) == 5):
			n, _ = strconv.Atoi(f[3])
		case f[0] == "VA" && len(f) >= 2:
			n, _ = strconv.Atoi(f[1])
		case textReplyWords[f[0]]:
		default:
			if _, err := strconv.ParseUint(line, 10, 64); err != nil {
				t.Fatalf("unexpected reply line %q to %q", line, trunc(in))
			}
		}
		if n >= 0 {
			if len(out) < n+2 || string(out[n:n+2]) != "\r\n" {
				t.Fatalf("data block of %d bytes after %q is malformed: %q", n, line, trunc(out))
			}
			out = out[n+2:]
		}
	}
}

func textSeeds(f *testing.F) {
	for _, tc := range textCases {
		f.Add([]byte(tc.req))
	}
	for _, s := range []string{
		"get " + strings.Repeat("k ", 100) + "\r\n",
		"set a 0 0 70000\r\n" + strings.Repeat("v", 100),
		"set a 0 0 5\r\nhel", "stats\r\nstats settings\r\nstats conns\r\n",
		"gat 10 a b c\r\n", "incr a 18446744073709551615\r\n", "quit\r\n",
		"set a 0 0 1\r\nx\r\nstats cachedump 1 0\r\nstats cachedump 99 1\r\nstats slabs\r\nstats items\r\n",
		"slabs reassign 1 2\r\nslabs automove 1\r\nslabs automove ratio 0.5\r\ncache_memlimit 100\r\ncache_memlimit 2 noreply\r\n",
	} {
		f.Add([]byte(s))
	}
}

func FuzzTextProtocol(f *testing.F) {
	textSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		out := fuzzServe(t, in)
		if len(in) > 0 && in[0] != binReqMagic {
			checkTextReplies(t, in, out)
		}
	})
}

func FuzzMetaProtocol(f *testing.F) {
	for _, tc := range metaCases {
		f.Add([]byte(tc.req))
	}
	for _, s := range []string{
		"ms a 2 T10 F3 c k O1 b\r\nhi\r\nmg a s v f t c k O1 h l q u T5\r\n",
		"ma a N0 J3 D2 MD v t c k O2 q\r\nma a T10 t N0\r\n",
		"md a C1 q k O3 b\r\nme a b\r\nmn\r\n",
		"ms YWJj 3 b MA C0\r\nxyz\r\n",
		"mg a N30 R20 T5 t v c k q\r\nmd a I T10 q\r\nmg a v\r\nms a 1 I C1 q\r\nx\r\nmg a b N-1\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := fuzzServe(t, in)
		if len(in) > 0 && in[0] != binReqMagic {
			checkTextReplies(t, in, out)
		}
	})
}

func FuzzBinaryProtocol(f *testing.F) {
	for _, tc := range binaryCases {
		var b []byte
		for _, r := range tc.reqs {
			b = append(b, r.bytes()...)
		}
		if len(b) < 1<<16 {
			f.Add(b)
		}
	}
	for _, tc := range binaryCloseCases {
		var b []byte
		for _, r := range tc.reqs {
			b = append(b, r.bytes()...)
		}
		f.Add(b)
	}
	f.Add(binReq{op: opStat}.bytes())
	f.Add(binReq{op: opStat, key: "settings"}.bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		out := fuzzServe(t, in)
		if len(in) == 0 || in[0] != binReqMagic {
			return
		}
		if _, rest, err := parseBinRes(out); err != nil || len(rest) != 0 {
			t.Fatalf("malformed responses to %q: %v, rest %q", trunc(in), err, trunc(rest))
		}
	})
}
