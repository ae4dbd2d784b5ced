package main

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// binFrame is a binary protocol request: the 24-byte header, then extras,
// key and value.
func binFrame(op uint8, extras, key, value string) []byte {
	h := make([]byte, 24, 24+len(extras)+len(key)+len(value))
	h[0], h[1] = 0x80, op
	binary.BigEndian.PutUint16(h[2:], uint16(len(key)))
	h[4] = uint8(len(extras))
	binary.BigEndian.PutUint32(h[8:], uint32(len(extras)+len(key)+len(value)))
	binary.BigEndian.PutUint32(h[12:], 0x1234)
	return append(append(append(h, extras...), key...), value...)
}

// binReply is a binary response to binFrame's requests: op, status and
// value, no extras, key or CAS.
func binReply(op uint8, status uint16, value string) string {
	h := make([]byte, 24)
	h[0], h[1] = 0x81, op
	binary.BigEndian.PutUint16(h[6:], status)
	binary.BigEndian.PutUint32(h[8:], uint32(len(value)))
	binary.BigEndian.PutUint32(h[12:], 0x1234)
	return string(h) + value
}

// TestServeBinaryUnknownAsMemcached: a binary request whose opcode
// memcached 1.6.18 does not know (verbosity, 0x1b, among them: 1.6.18 has
// no binary verbosity) is answered "Unknown command" once bodylen more
// bytes after its extras and key have been read and thrown away, as
// memcached's dispatch_bin_command swallows them: one that carries a key
// or extras is not answered until the client sends that many more bytes
// (the reply then comes, and a request whose bytes were swallowed is
// never answered). Each case sends its parts one after another and keeps
// what came back after each; warpkv's bytes must be memcached's, and the
// ones written here.
func TestServeBinaryUnknownAsMemcached(t *testing.T) {
	unknown := func(op uint8) string { return binReply(op, 0x81, "Unknown command") }
	noop := binFrame(0x0a, "", "", "")
	for _, tc := range []struct {
		name  string
		parts [][]byte
		want  []string // what comes back after each part
	}{
		{"unknown opcode without a body", [][]byte{binFrame(0x30, "", "", ""), noop},
			[]string{unknown(0x30), binReply(0x0a, 0, "")}},
		{"unknown opcode with a key waits for as many more bytes", [][]byte{binFrame(0x30, "", "foo", ""), []byte("abc"), noop},
			[]string{"", unknown(0x30), binReply(0x0a, 0, "")}},
		{"unknown opcode with a key swallows the next request's first bytes", [][]byte{append(binFrame(0x30, "", "foo", ""), noop...)},
			[]string{unknown(0x30)}},
		{"unknown opcode with extras, key and value", [][]byte{binFrame(0xfe, "abcd", "k", "vv"), []byte("12345"), noop},
			[]string{"", unknown(0xfe), binReply(0x0a, 0, "")}},
		{"verbosity without extras", [][]byte{binFrame(0x1b, "", "", ""), noop},
			[]string{unknown(0x1b), binReply(0x0a, 0, "")}},
		{"verbosity with its level waits for 4 more bytes", [][]byte{binFrame(0x1b, "\x00\x00\x00\x01", "", ""), []byte("wxyz"), noop},
			[]string{"", unknown(0x1b), binReply(0x0a, 0, "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(server, addr string) {
				got := binTranscript(t, addr, tc.parts)
				for i := range tc.want {
					if got[i] != tc.want[i] {
						t.Errorf("%s: after part %d got %q, want %q", server, i, got[i], tc.want[i])
					}
				}
			}
			check("warpkv", warpkvAddr(t))
			check("memcached", difftest.Memcached(t))
		})
	}
}

// warpkvAddr returns the address of a warpkv serve started for the test.
func warpkvAddr(t *testing.T) string {
	t.Helper()
	return difftest.Serve(t, "--device", "cpu").Addr
}

// binTranscript sends parts on one connection to addr, one after another,
// and returns what came back within 300 ms of each.
func binTranscript(t *testing.T, addr string, parts [][]byte) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	buf := make([]byte, 4096)
	for _, p := range parts {
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		var got []byte
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		for {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				t.Fatalf("read from %s: %v", addr, err)
			}
		}
		out = append(out, string(got))
	}
	return out
}
