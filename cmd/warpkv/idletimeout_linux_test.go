package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// TestServeIdleTimeoutAsMemcached: -o idle_timeout closes the connections
// memcached 1.6.18's idle timeout thread closes, and only those: a TCP
// connection waiting for a command (idle, or with half a command line)
// once its last command is older than the timeout; never one in the middle
// of sending a value (memcached's conn_nread), nor a unix socket's (it
// times out TCP connections only), nor one whose replies are not all sent
// (conn_mwrite). Every client waits idleWait with a 1 s
// timeout, then tries to finish; warpkv runs with its event loops and
// with a goroutine a connection.
func TestServeIdleTimeoutAsMemcached(t *testing.T) {
	// memcached's idle thread counts in its 1 s clock ticks (more than the
	// timeout: 2 s), sweeps the connections over about a second and then
	// sleeps a second: up to about 4 s after the last command, later on a
	// loaded machine (3.5 s was too short once under CI's load).
	const idleWait = 6500 * time.Millisecond
	_, port, _ := net.SplitHostPort(freeAddr(t))
	dir := t.TempDir()
	type client struct {
		name  string
		unix  bool
		first string // sent at once
		rest  string // sent after the wait
		want  string // the reply to first+rest; "" the connection closed
	}
	clients := []client{
		{name: "idle TCP", rest: "version\r\n"},
		{name: "TCP with half a command line", first: "get k", rest: "\r\n"},
		{name: "TCP in the middle of a value", first: "set k 0 0 10\r\nabc", rest: "defghij\r\n", want: "STORED\r\n"},
		{name: "idle unix socket", unix: true, rest: "set u 0 0 1\r\nx\r\n", want: "STORED\r\n"},
		{name: "unix socket with half a command line", unix: true, first: "get u", rest: "\r\n", want: "VALUE u 0 1\r\n"},
	}
	for i, server := range [][]string{{"warpkv"}, {"warpkv", "--loops", "-1"}, {"memcached"}} {
		t.Run(strings.Join(server, " "), func(t *testing.T) {
			sock := filepath.Join(dir, strconv.Itoa(i)+".sock")
			for _, args := range [][]string{{"-p", port, "-l", "127.0.0.1"}, {"-s", sock}} {
				args = append(args, "-o", "idle_timeout=1")
				if server[0] == "warpkv" {
					args = append(append([]string{"--device", "cpu"}, server[1:]...), args...)
					p := difftest.Serve(t, args...)
					defer stopServe(t, p)
				} else {
					startMemcachedProc(t, args...)
				}
			}
			conns := make([]net.Conn, len(clients))
			for i, cl := range clients {
				network, addr := "tcp", "127.0.0.1:"+port
				if cl.unix {
					network, addr = "unix", sock
				}
				c := dialStarting(t, network, addr)
				defer c.Close()
				if _, err := io.WriteString(c, cl.first); err != nil {
					t.Fatal(err)
				}
				conns[i] = c
			}
			// A client that asks for 64 MB and reads none of it for the
			// wait: memcached leaves a connection sending replies
			// (conn_mwrite) alone.
			reader := dialStarting(t, "tcp", "127.0.0.1:"+port)
			defer reader.Close()
			rr := bufio.NewReader(reader)
			if _, err := io.WriteString(reader, "set big 0 0 1000000\r\n"+strings.Repeat("v", 1000000)+"\r\n"); err != nil {
				t.Fatal(err)
			}
			if l, err := rr.ReadString('\n'); l != "STORED\r\n" {
				t.Fatalf("set big: %q, %v", l, err)
			}
			if _, err := io.WriteString(reader, strings.Repeat("get big\r\n", 64)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(idleWait)
			reader.SetReadDeadline(time.Now().Add(20 * time.Second))
			for n := 0; n < 64; {
				l, err := rr.ReadString('\n')
				if err != nil {
					t.Fatalf("a client reading its replies after %v: %v after %d of 64 values, want them all", idleWait, err, n)
				}
				if l == "END\r\n" {
					n++
				}
			}
			for i, cl := range clients {
				c := conns[i]
				io.WriteString(c, cl.rest) // may fail: closed
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				got, err := bufio.NewReader(c).ReadString('\n')
				switch {
				case cl.want == "" && err == nil:
					t.Errorf("%s: answered %q after %v, want the connection closed", cl.name, got, idleWait)
				case cl.want != "" && got != cl.want:
					t.Errorf("%s: %q (%v) after %v, want %q", cl.name, got, err, idleWait, cl.want)
				case cl.want == "" && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset"):
					t.Errorf("%s: %v, want the connection closed", cl.name, err)
				}
			}
		})
	}
}
