package difftest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Environment variables read by Memcached.
const (
	// EnvRequireMemcached turns "no memcached" from a skip into a failure
	// when set to 1.
	EnvRequireMemcached = "WARPKV_REQUIRE_MEMCACHED"
	// EnvMemcached names an already running memcached (host:port), used
	// only when the memcached binary is not installed.
	EnvMemcached = "WARPKV_MEMCACHED"
	// EnvMemcachedBin is the memcached binary to start (default: memcached
	// on $PATH).
	EnvMemcachedBin = "WARPKV_MEMCACHED_BIN"
)

// MemcachedArgs returns the flags Memcached starts memcached with, after
// -p: UDP off, loopback only, 64 MiB of item memory, 2 worker threads, the
// default 1 MiB item size limit, and no LRU maintainer or crawler threads.
// Those threads hold references to items at random moments, and memcached
// rewrites an incr or decr result in place (padded with spaces) only when
// nothing else holds the item, so with them its replies are not
// reproducible.
func MemcachedArgs() []string {
	return []string{"-U", "0", "-l", "127.0.0.1", "-m", "64", "-t", "1", "-I", "1m",
		"-o", "no_lru_maintainer,no_lru_crawler"}
}

// Memcached starts a memcached subprocess for the test and returns its
// address; the process is killed when the test ends. extra flags are added
// after MemcachedArgs() (a later flag overrides an earlier one). When the
// binary is missing it uses $WARPKV_MEMCACHED if set (a shared server: extra
// is ignored), else skips the test, or fails it under
// WARPKV_REQUIRE_MEMCACHED=1. Cost: one process start, usually under 50 ms.
func Memcached(tb testing.TB, extra ...string) string {
	tb.Helper()
	bin := os.Getenv(EnvMemcachedBin)
	if bin == "" {
		bin = "memcached"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		if addr := os.Getenv(EnvMemcached); addr != "" {
			return addr
		}
		unavailable(tb, fmt.Sprintf("no %s binary (%v) and $%s is not set", bin, err, EnvMemcached))
	}
	var last error
	for range 5 { // the free port can be taken between probe and bind
		addr, err := startMemcached(tb, path, extra)
		if err == nil {
			return addr
		}
		last = err
	}
	tb.Fatalf("difftest: starting memcached: %v", last)
	return ""
}

// OwnMemcached reports whether Memcached starts its own process (true) or
// falls back to the shared $WARPKV_MEMCACHED (false, or skips if neither).
func OwnMemcached() bool {
	bin := os.Getenv(EnvMemcachedBin)
	if bin == "" {
		bin = "memcached"
	}
	_, err := exec.LookPath(bin)
	return err == nil
}

func unavailable(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv(EnvRequireMemcached) == "1" {
		tb.Fatalf("memcached required ($%s=1) but unavailable: %s", EnvRequireMemcached, why)
	}
	tb.Skipf("memcached unavailable: %s", why)
}

// startMemcached starts one memcached on a free loopback port and waits
// until it accepts connections.
func startMemcached(tb testing.TB, path string, extra []string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	args := append([]string{"-p", strconv.Itoa(port)}, MemcachedArgs()...)
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached refuses root without -u
	}
	args = append(args, extra...)
	cmd := exec.Command(path, args...)
	out := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("exec %s: %w", path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			return "", fmt.Errorf("%s %v exited: %v: %s", path, args, err, out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("%s %v: not accepting connections after 10s: %v: %s", path, args, err, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Cleanup(stop)
	return addr, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it. Safe for concurrent
// use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}
