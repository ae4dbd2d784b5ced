package main

// Checks of the TCP and unix socket details issue 19 fixes for "warpkv
// serve" ("TCP_NODELAY, SO_REUSEPORT listeners per loop if it helps, -l
// with several addresses, unix sockets (-s) as memcached has them", "-c and
// the Too many open connections reply"), against the built binary and,
// where it is installed, memcached 1.6 run the same way.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
	"golang.org/x/sys/unix"
)

// errNoPeek says that this kernel or this process may not take another
// process's descriptors (pidfd_getfd needs Linux 5.6 and ptrace rights).
var errNoPeek = errors.New("cannot take another process's descriptors")

// serverNoDelay returns the TCP_NODELAY setting of the socket that process
// pid holds for the client connection c: it copies each of pid's sockets
// with pidfd_getfd and picks the one whose peer is c's local address.
func serverNoDelay(pid int, c net.Conn) (bool, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false, fmt.Errorf("%w: pidfd_open: %v", errNoPeek, err)
	}
	defer unix.Close(pidfd)
	local := c.LocalAddr().(*net.TCPAddr)
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if link, err := os.Readlink(filepath.Join(dir, e.Name())); err != nil || !strings.HasPrefix(link, "socket:") {
			continue
		}
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fd, err := unix.PidfdGetfd(pidfd, n, 0)
		if err != nil {
			return false, fmt.Errorf("%w: pidfd_getfd: %v", errNoPeek, err)
		}
		peer, perr := unix.Getpeername(fd)
		in4, ok := peer.(*unix.SockaddrInet4)
		if perr != nil || !ok || in4.Port != local.Port || net.IP(in4.Addr[:]).String() != local.IP.String() {
			unix.Close(fd)
			continue
		}
		v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		unix.Close(fd)
		return v != 0, err
	}
	return false, fmt.Errorf("no socket of process %d has the peer %s", pid, local)
}

// startMemcachedProc starts memcached with args (and -u root as root) and
// returns its process, killed when the test ends; it skips the test when
// memcached is not installed (fails under WARPKV_REQUIRE_MEMCACHED=1).
func startMemcachedProc(t *testing.T, args ...string) *os.Process {
	t.Helper()
	cmd := exec.Command(memcachedPath(t), memcachedArgs(args)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process
}

// dialStarting connects to addr over network, retrying for up to 10 s
// while the server starts, and fails the test if it cannot. The caller
// closes the connection.
func dialStarting(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err = net.DialTimeout(network, addr, time.Second); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("dial %s %s: %v", network, addr, err)
	}
	return c
}

// dialVersion connects to addr over network, asks "version" and returns
// the connection (closed when the test ends) and the answer's first line.
func dialVersion(t *testing.T, network, addr string) (net.Conn, string) {
	t.Helper()
	c := dialStarting(t, network, addr)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "version\r\n"); err != nil {
		return c, err.Error()
	}
	l, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return c, err.Error()
	}
	return c, l
}

// TestServeSetsTCPNoDelay: every accepted TCP connection has TCP_NODELAY,
// on the event loops and on a goroutine per connection (--loops -1), as
// memcached's (it sets the option on its listening socket, which accepted
// sockets inherit), so that a reply is not held back by Nagle's algorithm
// waiting for the client's delayed ACK.
func TestServeSetsTCPNoDelay(t *testing.T) {
	check := func(name string, pid int, addr string) {
		c, l := dialVersion(t, "tcp", addr)
		if !strings.HasPrefix(l, "VERSION ") {
			t.Fatalf("%s: version answered %q", name, l)
		}
		on, err := serverNoDelay(pid, c)
		if errors.Is(err, errNoPeek) {
			t.Skipf("%s: %v", name, err)
		}
		if err != nil || !on {
			t.Errorf("%s: the server's socket has TCP_NODELAY %v (%v), want on", name, on, err)
		}
	}
	// The probe itself, on a socket of this process with the option off.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	accepted.(*net.TCPConn).SetNoDelay(false)
	if on, err := serverNoDelay(os.Getpid(), client); errors.Is(err, errNoPeek) {
		t.Skip(err)
	} else if err != nil || on {
		t.Fatalf("the probe reads TCP_NODELAY %v (%v) on a socket without it", on, err)
	}

	for _, args := range [][]string{{"--device", "cpu"}, {"--device", "cpu", "--loops", "-1"}} {
		p := difftest.Serve(t, args...)
		check(fmt.Sprint("warpkv serve ", args), p.Cmd.Process.Pid, p.Addr)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	mc := startMemcachedProc(t, "-U", "0", "-l", "127.0.0.1", "-p", port, "-t", "1")
	check("memcached", mc.Pid, addr)
}

// TestServeUnixSocketAsMemcached: -s listens on a unix socket instead of
// TCP (memcached: "disables network support"), with the access mask -a
// (0700 by default), the same modes memcached gives its socket.
func TestServeUnixSocketAsMemcached(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mask []string
		want os.FileMode
	}{{nil, 0o700}, {[]string{"-a", "0770"}, 0o770}, {[]string{"-a", "666"}, 0o666}, {[]string{"-a", "0"}, 0}} {
		port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
		sock := filepath.Join(dir, fmt.Sprintf("warpkv%o.sock", c.want))
		difftest.Serve(t, append([]string{"--device", "cpu", "-p", port, "-s", sock}, c.mask...)...)
		// A socket without the owner's write bit takes only root's clients.
		canDial := c.want&0o200 != 0 || os.Geteuid() == 0
		if canDial {
			if _, l := dialVersion(t, "unix", sock); !strings.HasPrefix(l, "VERSION ") {
				t.Errorf("-s %v: version answered %q", c.mask, l)
			}
		}
		st, err := os.Stat(sock)
		if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != c.want {
			t.Errorf("warpkv -s %v: %v, %v; want a socket of mode %v", c.mask, st.Mode(), err, c.want)
		}
		if nc, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
			nc.Close()
			t.Errorf("warpkv -s %v -p %s also listens on TCP port %s", c.mask, port, port)
		}

		mcSock := filepath.Join(dir, fmt.Sprintf("memcached%o.sock", c.want))
		startMemcachedProc(t, append([]string{"-U", "0", "-s", mcSock}, c.mask...)...)
		if !canDial {
			continue
		}
		if _, l := dialVersion(t, "unix", mcSock); !strings.HasPrefix(l, "VERSION ") {
			t.Fatalf("memcached -s %v: version answered %q", c.mask, l)
		}
		if mst, err := os.Stat(mcSock); err != nil || mst.Mode() != st.Mode() {
			t.Errorf("-s %v: warpkv's socket %v, memcached's %v (%v)", c.mask, st.Mode(), mst.Mode(), err)
		}
	}
}

// TestServeListenRepeatedAndConnectionLimit: -l repeated listens on each
// address (as a comma separated list does), and past -c connections a new
// one gets "ERROR Too many open connections" and is closed, while those
// under the limit, and one opened after another closed, are served.
func TestServeListenRepeatedAndConnectionLimit(t *testing.T) {
	ab := freeAddrs(t, 2)
	a, b := ab[0], ab[1]
	difftest.Serve(t, "--device", "cpu", "-l", a, "-l", b, "-c", "2")
	first, l1 := dialVersion(t, "tcp", a)
	_, l2 := dialVersion(t, "tcp", b)
	if !strings.HasPrefix(l1, "VERSION ") || !strings.HasPrefix(l2, "VERSION ") {
		t.Fatalf("-l %s -l %s: version answered %q and %q", a, b, l1, l2)
	}
	third, l3 := dialVersion(t, "tcp", a)
	if l3 != "ERROR Too many open connections\r\n" {
		t.Errorf("a third connection under -c 2: %q, want ERROR Too many open connections", l3)
	}
	// Closed: an end of file, or a reset when the request was left unread.
	if n, err := third.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, unix.ECONNRESET) {
		t.Errorf("the refused connection: read %d bytes, %v; want it closed", n, err)
	}
	first.Close()
	var l4 string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, l4 = dialVersion(t, "tcp", b); strings.HasPrefix(l4, "VERSION ") {
			break
		}
	}
	if !strings.HasPrefix(l4, "VERSION ") {
		t.Errorf("after one of two connections closed, a new one got %q", l4)
	}
}

// TestServeBinaryDifferential (issue 19: "all three protocols
// byte-identical to memcached 1.6.18 (the differential tests)" on the new
// front end): the built binary's serve, with its default event loops and
// with a goroutine per connection (--loops -1), against memcached on the
// random text, meta and binary sequences of the differential test.
func TestServeBinaryDifferential(t *testing.T) {
	mc := difftest.Memcached(t)
	for _, args := range [][]string{{"--device", "cpu"}, {"--device", "cpu", "--loops", "-1"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			p := difftest.Serve(t, args...)
			difftest.Run(t, mc, p.Addr, difftest.Config{Sequences: 10})
		})
	}
}
