package difftest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Dial connects to addr, failing the test on error; the connection is
// closed when the test ends.
func Dial(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { nc.Close() })
	return nc
}

// TextClient is a minimal memcached text protocol client for tests of
// whole servers: it sends raw requests and reads reply lines.
type TextClient struct {
	tb testing.TB
	nc net.Conn
	r  *bufio.Reader
}

// NewTextClient dials addr; the connection closes when the test ends.
func NewTextClient(tb testing.TB, addr string) *TextClient {
	tb.Helper()
	nc := Dial(tb, addr)
	return &TextClient{tb: tb, nc: nc, r: bufio.NewReaderSize(nc, 1<<20)}
}

// Send writes req, failing the test on error.
func (c *TextClient) Send(req string) {
	c.tb.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.nc.Write([]byte(req)); err != nil {
		c.tb.Fatalf("send %.60q: %v", req, err)
	}
}

// Line reads one reply line, without its CRLF.
func (c *TextClient) Line() string {
	c.tb.Helper()
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, err := c.r.ReadString('\n')
	if err != nil {
		c.tb.Fatalf("read reply: %v (got %q)", err, l)
	}
	return strings.TrimSuffix(l, "\r\n")
}

// Do sends req and returns its first reply line.
func (c *TextClient) Do(req string) string {
	c.tb.Helper()
	c.Send(req)
	return c.Line()
}

// Lines sends req and returns the reply lines up to and without the first
// line equal to end (for stats: "END").
func (c *TextClient) Lines(req, end string) []string {
	c.tb.Helper()
	c.Send(req)
	var out []string
	for {
		l := c.Line()
		if l == end {
			return out
		}
		out = append(out, l)
	}
}

// Stats returns a stats group (""; "slabs"; "items"; ...) as a map.
func (c *TextClient) Stats(group string) map[string]string {
	c.tb.Helper()
	req := "stats\r\n"
	if group != "" {
		req = "stats " + group + "\r\n"
	}
	m := map[string]string{}
	for _, l := range c.Lines(req, "END") {
		f := strings.SplitN(l, " ", 3)
		if len(f) == 3 && f[0] == "STAT" {
			m[f[1]] = f[2]
		}
	}
	return m
}

// Get returns the value of key and whether it was a hit.
func (c *TextClient) Get(key string) (string, bool) {
	c.tb.Helper()
	c.Send("get " + key + "\r\n")
	l := c.Line()
	if l == "END" {
		return "", false
	}
	f := strings.Fields(l)
	if len(f) < 4 || f[0] != "VALUE" {
		c.tb.Fatalf("get %s: %q", key, l)
	}
	n, _ := strconv.Atoi(f[3])
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, buf); err != nil {
		c.tb.Fatalf("get %s: value: %v", key, err)
	}
	if end := c.Line(); end != "END" {
		c.tb.Fatalf("get %s: %q after the value", key, end)
	}
	return string(buf[:n]), true
}

// Set stores key and returns the reply line.
func (c *TextClient) Set(key, value string) string {
	c.tb.Helper()
	return c.Do(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", key, len(value), value))
}
