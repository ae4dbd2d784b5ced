package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// Tests of the warpkv binary with memcached tools this project did not
// write (Debian's libmemcached-tools and nutcracker); .ci/run installs them
// and sets WARPKV_REQUIRE_TOOLS=1 so that they cannot skip there.

// tool runs a tool with a timeout and returns its combined output and exit
// error.
func tool(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	path := difftest.LookTool(t, name)
	cmd := exec.Command(path, args...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %v: no exit after 120s:\n%s", name, args, out)
	}
	return string(out), err
}

// TestMemccapable runs libmemcached's memccapable, its protocol
// conformance suite, against the binary, with its event loops on epoll and
// on io_uring (--loop-io): all 27 ascii and all 27 binary tests must pass.
func TestMemccapable(t *testing.T) {
	for _, loopIO := range []string{"epoll", "uring", "uringpoll"} {
		p := difftest.Serve(t, "--loop-io", loopIO)
		host, port, _ := strings.Cut(p.Addr, ":")
		for _, mode := range []string{"-a", "-b"} {
			out, err := tool(t, "memccapable", "-h", host, "-p", port, mode)
			passed := strings.Count(out, "[pass]")
			t.Logf("--loop-io %s: memccapable %s: %d passed", loopIO, mode, passed)
			if err != nil || passed != 27 || !strings.Contains(out, "All tests passed") {
				t.Errorf("--loop-io %s: memccapable %s: %v, %d of 27 passed:\n%s", loopIO, mode, err, passed, out)
			}
		}
	}
}

// TestLibmemcachedTools checks memcstat, memcping, memccp, memccat and
// memcdump against the binary.
func TestLibmemcachedTools(t *testing.T) {
	p := difftest.Serve(t)
	servers := "--servers=" + p.Addr
	out, err := tool(t, "memcstat", servers)
	if err != nil || !regexp.MustCompile(`(?m)^\s+version: [0-9]+\.[0-9]+\.[0-9]+$`).MatchString(out) ||
		!strings.Contains(out, "warpkv_version: "+version) {
		t.Errorf("memcstat: %v:\n%s", err, out)
	}
	if out, err := tool(t, "memcping", servers); err != nil {
		t.Errorf("memcping: %v:\n%s", err, out)
	}
	dir := t.TempDir()
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("file%d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", 10*i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := tool(t, "memccp", servers, filepath.Join(dir, name)); err != nil {
			t.Fatalf("memccp: %v:\n%s", err, out)
		}
		want = append(want, name)
	}
	if out, err := tool(t, "memccat", servers, "file3.txt"); err != nil || strings.TrimSuffix(out, "\n") != strings.Repeat("x", 31) {
		t.Errorf("memccat file3.txt: %v: %q", err, out)
	}
	out, err = tool(t, "memcdump", servers)
	got := strings.Fields(out)
	if err != nil || len(got) != len(want) {
		t.Fatalf("memcdump: %v: %q, want the %d keys %v", err, out, len(want), want)
	}
	for _, k := range want {
		if !strings.Contains(out, k) {
			t.Errorf("memcdump lacks %s: %q", k, out)
		}
	}
}

// TestNutcracker runs the repository's twemproxy configuration
// (deploy/nutcracker.yml, with free ports) in front of two warpkv servers:
// keys written through the proxy must land on both servers, split
// between them, and every one must read back through the proxy.
func TestNutcracker(t *testing.T) {
	bin := difftest.LookTool(t, "nutcracker")
	a, b := difftest.Serve(t), difftest.Serve(t)
	conf, err := os.ReadFile("../../deploy/nutcracker.yml")
	if err != nil {
		t.Fatal(err)
	}
	two := freeAddrs(t, 2)
	listen := two[0]
	text := strings.NewReplacer("127.0.0.1:22121", listen,
		"127.0.0.1:11211:1", a.Addr+":1", "127.0.0.1:11212:1", b.Addr+":1").Replace(string(conf))
	dir := t.TempDir()
	confPath := filepath.Join(dir, "nutcracker.yml")
	if err := os.WriteFile(confPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, statsPort, _ := strings.Cut(two[1], ":")
	cmd := exec.Command(bin, "-c", confPath, "-s", statsPort, "-a", "127.0.0.1",
		"-o", filepath.Join(dir, "nutcracker.log"), "-p", filepath.Join(dir, "nutcracker.pid"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nutcracker: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	var proxy *difftest.TextClient
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if nc, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
			nc.Close()
			proxy = difftest.NewTextClient(t, listen)
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "nutcracker.log"))
			t.Fatalf("nutcracker not listening on %s after 10s:\n%s", listen, log)
		}
	}
	const keys = 1000
	for i := range keys {
		if got := proxy.Set(fmt.Sprintf("user:%d", i), fmt.Sprintf("value-%d", i)); got != "STORED" {
			t.Fatalf("set user:%d through the proxy: %q", i, got)
		}
	}
	for i := range keys {
		v, ok := proxy.Get(fmt.Sprintf("user:%d", i))
		if !ok || v != fmt.Sprintf("value-%d", i) {
			t.Fatalf("get user:%d through the proxy: %q, %v", i, v, ok)
		}
	}
	na, _ := strconv.Atoi(difftest.NewTextClient(t, a.Addr).Stats("")["curr_items"])
	nb, _ := strconv.Atoi(difftest.NewTextClient(t, b.Addr).Stats("")["curr_items"])
	t.Logf("%d keys through nutcracker: %d on one server, %d on the other", keys, na, nb)
	if na+nb != keys || na < keys/5 || nb < keys/5 {
		t.Errorf("servers hold %d and %d of %d keys; want all, split between both", na, nb, keys)
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrs(t, 1)[0]
}

// freeAddrs returns n distinct free loopback addresses. It holds every
// listener open until all n are chosen: picking them one at a time lets
// the kernel hand the same port out twice, and a test that wanted two
// ports would then bind one twice (CI saw "address already in use").
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}
