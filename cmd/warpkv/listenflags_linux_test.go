package main

// Checks of serve's listening flags as a memcached 1.6.18 user gives them
// (issue 19: "-l with several addresses, unix sockets (-s) as memcached
// has them"): -l repeated with an address already given, one -l naming an
// address twice, -U 0 (memcached's default: no UDP), and the listeners as
// "stats settings" reports them (tcpport, udpport, inter, domain_socket,
// umask). Each case runs the built binary and, where it is installed,
// memcached with the same arguments.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// TestServeListenArgumentsAsMemcached: the -l and -U arguments memcached
// 1.6.18 takes are taken the same way: served where memcached serves,
// refused where it refuses (an interface without a host or with a bad
// port, which Go alone would read as every interface or any port), IPv4's
// 0.0.0.0 taking no IPv6 clients. -U other than 0 is refused by warpkv
// alone (memcached would serve UDP there; warpkv has none).
func TestServeListenArgumentsAsMemcached(t *testing.T) {
	abc := freeAddrs(t, 3)
	a, b := abc[0], abc[1]
	_, port, _ := net.SplitHostPort(abc[2])
	for _, tc := range []struct {
		name        string
		args        []string
		serves      []string // addresses answering "version"; none: the server must exit
		refuses     []string // addresses that must take no connection while it serves
		fails       string   // warpkv's message when it must exit
		noMemcached bool     // memcached behaves otherwise on purpose
	}{
		{name: "-l repeated with the same address listens once", args: []string{"-l", a, "-l", a}, serves: []string{a}},
		{name: "-l repeated with an address of the first list", args: []string{"-l", a + "," + b, "-l", a}, serves: []string{a, b}},
		{name: "-U 0, memcached's default", args: []string{"-U", "0", "-l", a}, serves: []string{a}},
		{name: "-l with interfaces separated by a semicolon", args: []string{"-l", a + ";" + b}, serves: []string{a, b}},
		{name: "-l with empty interfaces between commas skips them", args: []string{"-l", a + ",," + b + ","}, serves: []string{a, b}},
		{name: "one -l naming an address twice fails to listen", args: []string{"-l", a + "," + a}, fails: "address already in use"},
		{name: "-l with no host is refused", args: []string{"-l", ":" + port}, fails: `interface ":` + port + `": no host`},
		{name: "-l with an empty port is refused", args: []string{"-l", "127.0.0.1:"}, fails: `invalid port number ""`},
		{name: "-l with a port name is refused", args: []string{"-l", "127.0.0.1:http"}, fails: `invalid port number "http"`},
		{name: "-l 0.0.0.0 is IPv4 only", args: []string{"-p", port, "-l", "0.0.0.0"},
			serves: []string{"127.0.0.1:" + port}, refuses: []string{"[::1]:" + port}},
		{name: "-l with a host name listens on each of its addresses", args: []string{"-p", port, "-l", "localhost"}, serves: localhostAddrs(t, port)},
		{name: "-l '*' listens on every interface, IPv4 and IPv6", args: []string{"-p", port, "-l", "*"}, serves: loopbackAddrs(port)},
		{name: "-U with a port is refused: no UDP", args: []string{"-U", "11211", "-l", a}, fails: "-U 11211: warpkv serves no UDP", noMemcached: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.serves) > 0 {
				p := difftest.Serve(t, append([]string{"--device", "cpu"}, tc.args...)...)
				for _, addr := range tc.serves {
					c, l := dialVersion(t, "tcp", addr)
					c.Close()
					if !strings.HasPrefix(l, "VERSION ") {
						t.Errorf("warpkv serve %v: %s answered %q", tc.args, addr, l)
					}
				}
				checkRefused(t, "warpkv serve", tc.args, tc.refuses)
				stopServe(t, p) // memcached listens on the same addresses next
			} else {
				code, out := runToExit(t, difftest.WarpkvBinary(t), append([]string{"serve", "--device", "cpu"}, tc.args...)...)
				if code == 0 || !strings.Contains(out, tc.fails) {
					t.Errorf("warpkv serve %v: exit %d, want a failure saying %q:\n%s", tc.args, code, tc.fails, out)
				}
			}
			if tc.noMemcached {
				return
			}
			t.Run("memcached", func(t *testing.T) {
				if len(tc.serves) > 0 {
					startMemcachedProc(t, tc.args...)
					for _, addr := range tc.serves {
						if _, l := dialVersion(t, "tcp", addr); !strings.HasPrefix(l, "VERSION ") {
							t.Errorf("memcached %v: %s answered %q", tc.args, addr, l)
						}
					}
					checkRefused(t, "memcached", tc.args, tc.refuses)
					return
				}
				if code, out := runToExit(t, memcachedPath(t), memcachedArgs(tc.args)...); code == 0 {
					t.Errorf("memcached %v: exit 0, want a failure like warpkv's:\n%s", tc.args, out)
				}
			})
		})
	}
}

// localhostAddrs returns host:port for each address "localhost" resolves
// to, each of which memcached listens on with -l localhost.
func localhostAddrs(t *testing.T, port string) []string {
	t.Helper()
	ips, err := net.LookupIP("localhost")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ip := range ips {
		out = append(out, net.JoinHostPort(ip.String(), port))
	}
	t.Logf("localhost: %v", out)
	return out
}

// loopbackAddrs returns 127.0.0.1:port, and [::1]:port where this machine
// has an IPv6 loopback: where a server listening on every interface
// answers.
func loopbackAddrs(port string) []string {
	out := []string{"127.0.0.1:" + port}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln.Close()
		out = append(out, "[::1]:"+port)
	}
	return out
}

// checkRefused fails the test when a server started with args takes a
// connection at one of addrs; an IPv6 address where this machine has no
// IPv6 loopback is not tried.
func checkRefused(t *testing.T, server string, args, addrs []string) {
	t.Helper()
	for _, addr := range addrs {
		if strings.HasPrefix(addr, "[") {
			ln, err := net.Listen("tcp6", "[::1]:0")
			if err != nil {
				t.Logf("no IPv6 loopback (%v): %s not tried", err, addr)
				continue
			}
			ln.Close()
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s %v: %s took a connection, want none", server, args, addr)
		}
	}
}

// TestServeStatsSettingsListenersAsMemcached: "stats settings" gives the
// listeners as memcached 1.6.18 does: tcpport the -p port (under -s too),
// udpport 0, inter the -l interfaces as given (NULL under -s), domain_socket the -s path (else NULL) and
// umask the -a mask in octal.
func TestServeStatsSettingsListenersAsMemcached(t *testing.T) {
	dir := t.TempDir()
	two := freeAddrs(t, 2)
	_, port, _ := net.SplitHostPort(two[0])
	other := two[1]
	_, otherPort, _ := net.SplitHostPort(other)
	for _, tc := range []struct {
		name    string
		args    func(sock string) []string
		network string // where the client connects: tcp to 127.0.0.1:port, or unix to the socket
		want    map[string]string
	}{
		{"TCP on two interfaces", func(string) []string { return []string{"-p", port, "-l", "127.0.0.1,127.0.0.1:" + otherPort} }, "tcp",
			map[string]string{"tcpport": port, "udpport": "0", "inter": "127.0.0.1,127.0.0.1:" + otherPort, "domain_socket": "NULL", "umask": "700"}},
		{"every IPv4 interface", func(string) []string { return []string{"-p", port, "-l", "0.0.0.0"} }, "tcp",
			map[string]string{"tcpport": port, "inter": "0.0.0.0", "domain_socket": "NULL"}},
		{"a host name as given", func(string) []string { return []string{"-p", port, "-l", "localhost"} }, "tcp",
			map[string]string{"tcpport": port, "inter": "localhost", "domain_socket": "NULL"}},
		{"an interface with -p's port as given", func(string) []string { return []string{"-p", port, "-l", "127.0.0.1:" + port} }, "tcp",
			map[string]string{"tcpport": port, "inter": "127.0.0.1:" + port}},
		{"unix socket with -a 0", func(sock string) []string { return []string{"-p", port, "-s", sock, "-a", "0"} }, "unix",
			map[string]string{"domain_socket": "", "umask": "0"}},
		{"unix socket with -a 0770", func(sock string) []string { return []string{"-p", port, "-s", sock, "-a", "0770"} }, "unix",
			map[string]string{"tcpport": port, "udpport": "0", "inter": "NULL", "domain_socket": "", "umask": "770"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, server := range []string{"warpkv", "memcached"} {
				sock := filepath.Join(dir, server+".sock")
				var p *difftest.Process
				if server == "warpkv" {
					p = difftest.Serve(t, append([]string{"--device", "cpu"}, tc.args(sock)...)...)
				} else {
					startMemcachedProc(t, tc.args(sock)...)
				}
				addr := "127.0.0.1:" + port
				if tc.network == "unix" {
					addr = sock
				}
				if tc.want["umask"] == "0" && os.Geteuid() != 0 {
					t.Skip("a socket of mode 0 takes root's clients only")
				}
				got := statsSettings(t, tc.network, addr)
				for name, want := range tc.want {
					if name == "domain_socket" && want == "" {
						want = sock
					}
					if got[name] != want {
						t.Errorf("%s %v: stats settings %s = %q, want %q", server, tc.args(sock), name, got[name], want)
					}
				}
				if p != nil {
					stopServe(t, p) // memcached listens on the same port next
				}
			}
		})
	}
}

// stopServe stops a warpkv serve with SIGINT and waits for it to exit 0.
func stopServe(t *testing.T, p *difftest.Process) {
	t.Helper()
	if err := p.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code, exited := p.Wait(10 * time.Second); !exited || code != 0 {
		t.Fatalf("warpkv serve: exited %v with status %d after SIGINT, want 0 at once:\n%s", exited, code, p.Log())
	}
}

// statsSettings dials addr over network (retrying for up to 10 s while the
// server starts) and returns its "stats settings" as a map.
func statsSettings(t *testing.T, network, addr string) map[string]string {
	t.Helper()
	nc := dialStarting(t, network, addr)
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, "stats settings\r\n"); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	r := bufio.NewReader(nc)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stats settings from %s: %v after %d lines", addr, err, len(out))
		}
		f := strings.Fields(l)
		if len(f) == 1 && f[0] == "END" {
			return out
		}
		if len(f) == 3 && f[0] == "STAT" {
			out[f[1]] = f[2]
		}
	}
}

// runToExit runs path with args and returns its exit code and output; a
// process still running after 20 s is killed and fails the test (a server
// that should have refused its arguments).
func runToExit(t *testing.T, path string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v still ran after 20 s; want it to exit:\n%s", path, args, out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("%s %v: %v", path, args, err)
	}
	return 0, string(out)
}

// memcachedPath returns memcached's path, skipping the test when it is not
// installed (failing under WARPKV_REQUIRE_MEMCACHED=1).
func memcachedPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("memcached")
	if err != nil {
		if os.Getenv(difftest.EnvRequireMemcached) == "1" {
			t.Fatalf("memcached required ($%s=1): %v", difftest.EnvRequireMemcached, err)
		}
		t.Skipf("memcached is not installed: %v", err)
	}
	return path
}

// memcachedArgs returns args with "-u root" added when running as root,
// which memcached requires.
func memcachedArgs(args []string) []string {
	if os.Geteuid() == 0 {
		return append(append([]string(nil), args...), "-u", "root")
	}
	return args
}
