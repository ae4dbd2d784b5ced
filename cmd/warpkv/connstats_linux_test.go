package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// TestServeConnectionStatsAsMemcached: "stats" counts connections as
// memcached 1.6.18 does, whose listening sockets are connections too:
// curr_connections is the listeners and clients less one, total_connections
// the listeners and every client since start (0 after "stats reset"),
// connection_structures the listeners and the most clients at once. Each
// case holds three clients open, asks from a fourth, closes the three and
// asks again, then resets (a client stays open on each other listener);
// warpkv's figures must be memcached's, and the ones written here.
func TestServeConnectionStatsAsMemcached(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mc.sock")
	ab := freeAddrs(t, 2)
	a, b := ab[0], ab[1]
	for _, tc := range []struct {
		name    string
		args    []string
		network string
		addrs   []string // every listener's address, the first asked
	}{
		{"one TCP listener", []string{"-l", a}, "tcp", []string{a}},
		{"two TCP listeners", []string{"-l", a + "," + b}, "tcp", []string{a, b}},
		{"a unix socket", []string{"-s", sock}, "unix", []string{sock}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, e := len(tc.addrs), len(tc.addrs)-1 // listeners; clients held on the others
			want := []string{
				fmt.Sprintf("curr %d total %d structures %d", l+e+3, l+e+4, l+e+4),
				fmt.Sprintf("curr %d total %d structures %d", l+e, l+e+4, l+e+4),
				fmt.Sprintf("curr %d total %d structures %d", l+e, 0, l+e+4),
			}
			p := difftest.Serve(t, append([]string{"--device", "cpu"}, tc.args...)...)
			got := connStatsTranscript(t, tc.network, tc.addrs)
			stopServe(t, p) // memcached listens on the same addresses next
			startMemcachedProc(t, tc.args...)
			mc := connStatsTranscript(t, tc.network, tc.addrs)
			for i := range want {
				if got[i] != want[i] || mc[i] != want[i] {
					t.Errorf("step %d: warpkv %q, memcached %q, want %q", i, got[i], mc[i], want[i])
				}
			}
		})
	}
}

// connStatsTranscript connects a client to every listener at addrs but the
// first (so that each is accepting; they stay open), holds three clients
// on the first, and returns the connection
// stats seen from a fourth: with the three open, once they have closed,
// and after "stats reset".
func connStatsTranscript(t *testing.T, network string, addrs []string) []string {
	t.Helper()
	for _, addr := range addrs[1:] {
		if _, l := dialVersion(t, network, addr); !strings.HasPrefix(l, "VERSION ") {
			t.Fatalf("%s answered %q", addr, l)
		}
	}
	var held []net.Conn
	for range 3 {
		c, l := dialVersion(t, network, addrs[0])
		if !strings.HasPrefix(l, "VERSION ") {
			t.Fatalf("%s answered %q", addrs[0], l)
		}
		held = append(held, c)
	}
	c, _ := dialVersion(t, network, addrs[0])
	r := bufio.NewReader(c)
	ask := func(cmd string) map[string]string {
		if _, err := io.WriteString(c, cmd); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v", strings.TrimSpace(cmd), err)
			}
			f := strings.Fields(l)
			if len(f) == 1 && (f[0] == "END" || f[0] == "RESET") {
				return out
			}
			if len(f) == 3 && f[0] == "STAT" {
				out[f[1]] = f[2]
			}
		}
	}
	line := func(st map[string]string) string {
		return fmt.Sprintf("curr %s total %s structures %s", st["curr_connections"], st["total_connections"], st["connection_structures"])
	}
	first := ask("stats\r\n")
	out := []string{line(first)}
	for _, h := range held {
		h.Close()
	}
	// The server sees the closes a moment later: wait for curr_connections
	// to drop by three.
	n0, _ := strconv.Atoi(first["curr_connections"])
	st := ask("stats\r\n")
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); st = ask("stats\r\n") {
		if n, _ := strconv.Atoi(st["curr_connections"]); n <= n0-3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	out = append(out, line(st))
	ask("stats reset\r\n")
	return append(out, line(ask("stats\r\n")))
}
