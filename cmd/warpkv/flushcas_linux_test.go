package main

// The CAS values a client sees around flush_all, byte for byte as
// memcached 1.6.18 gives them (issue 19: "all three protocols
// byte-identical to memcached 1.6.18"): a flush that takes effect now
// spends a CAS unique, so the next write's CAS is one higher.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// flushCASSteps is what TestServeFlushSpendsCASAsMemcached sends: text
// requests, a binary flush on a second connection, text again. Each text
// part ends with mn, whose MN ends the part's replies.
var flushCASSteps = [2]string{
	"set a 0 0 1\r\nx\r\ngets a\r\n" +
		"flush_all\r\nset a 0 0 1\r\ny\r\ngets a\r\n" +
		"flush_all 0 noreply\r\nflush_all -1\r\n" +
		"flush_all 1000\r\nset a 0 0 1\r\nz\r\ngets a\r\nmn\r\n",
	"set a 0 0 1\r\nw\r\ngets a\r\nms b 1 c\r\nv\r\nmn\r\n",
}

// flushCASWant is memcached 1.6.18's transcript of flushCASSteps on a fresh
// server: CAS 1 for the first set; flush_all spends 2, the next set gets 3;
// flush_all 0 and -1 spend 4 and 5, the delayed flush_all 1000 none, so 6;
// the binary flush spends 7, then 8 and 9.
const flushCASWant = "STORED\r\nVALUE a 0 1 1\r\nx\r\nEND\r\n" +
	"OK\r\nSTORED\r\nVALUE a 0 1 3\r\ny\r\nEND\r\n" +
	"OK\r\n" +
	"OK\r\nSTORED\r\nVALUE a 0 1 6\r\nz\r\nEND\r\nMN\r\n" +
	"binary flush: status 0\n" +
	"STORED\r\nVALUE a 0 1 8\r\nw\r\nEND\r\nHD c9\r\nMN\r\n"

// TestServeFlushSpendsCASAsMemcached: the built binary's replies to
// flushCASSteps are flushCASWant, memcached's (checked against memcached
// itself where it is installed).
func TestServeFlushSpendsCASAsMemcached(t *testing.T) {
	p := difftest.Serve(t, "--device", "cpu")
	if got := flushCASTranscript(t, p.Addr); got != flushCASWant {
		t.Errorf("warpkv serve: flush_all and CAS values:\n%q\nwant memcached's\n%q", got, flushCASWant)
	}
	t.Run("memcached", func(t *testing.T) {
		if !difftest.OwnMemcached() {
			t.Skip("no memcached of the test's own: a shared one is not fresh")
		}
		if got := flushCASTranscript(t, difftest.Memcached(t)); got != flushCASWant {
			t.Errorf("memcached: flush_all and CAS values:\n%q\nwant\n%q", got, flushCASWant)
		}
	})
}

// flushCASTranscript sends flushCASSteps to the server at addr and returns
// its replies, the binary flush's as one line of its status.
func flushCASTranscript(t *testing.T, addr string) string {
	t.Helper()
	text := dialStarting(t, "tcp", addr)
	defer text.Close()
	text.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(text)
	var out bytes.Buffer
	part := func(req string) {
		if _, err := io.WriteString(text, req); err != nil {
			t.Fatal(err)
		}
		for !bytes.HasSuffix(out.Bytes(), []byte("MN\r\n")) {
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: reading replies: %v after %q", addr, err, out.String())
			}
			out.WriteString(l)
		}
	}
	part(flushCASSteps[0])

	bin := dialStarting(t, "tcp", addr)
	defer bin.Close()
	bin.SetDeadline(time.Now().Add(10 * time.Second))
	req := make([]byte, 24)
	req[0], req[1] = 0x80, 0x08 // request magic, flush, no extras, key or body
	if _, err := bin.Write(req); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 24)
	if _, err := io.ReadFull(bin, hdr); err != nil {
		t.Fatalf("%s: binary flush: %v", addr, err)
	}
	if body := binary.BigEndian.Uint32(hdr[8:]); body > 0 {
		io.CopyN(io.Discard, bin, int64(body))
	}
	out.WriteString("binary flush: status " + strconv.Itoa(int(binary.BigEndian.Uint16(hdr[6:]))) + "\n")

	part(flushCASSteps[1])
	return out.String()
}
