package difftest

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
	"sync"
	"testing"
	"time"
)

// Environment variables read by the binary harness.
const (
	// EnvWarpkvBin names a built warpkv binary to test instead of building
	// one (the GPU machines run packed test binaries without a Go
	// toolchain).
	EnvWarpkvBin = "WARPKV_BIN"
	// EnvRequireTools turns a missing tool (the warpkv build, memccapable,
	// nutcracker, ...) from a skip into a failure when set to 1; .ci/run
	// sets it.
	EnvRequireTools = "WARPKV_REQUIRE_TOOLS"
)

var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// WarpkvMain runs a test binary's tests (m.Run) and then removes the
// warpkv binary WarpkvBinary built for them; call it from TestMain.
func WarpkvMain(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	return code
}

// WarpkvBinary returns the path of a warpkv binary built from this module
// with "go build" (once per test process; $WARPKV_BIN instead when set), so
// that tests run what users run. Without a Go toolchain the test is
// skipped, or failed under WARPKV_REQUIRE_TOOLS=1. Cost: one build, a few
// seconds uncached.
func WarpkvBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(EnvWarpkvBin); p != "" {
		return p
	}
	build.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			build.err = fmt.Errorf("no go toolchain to build warpkv (%v) and $%s is not set", err, EnvWarpkvBin)
			return
		}
		build.dir, build.err = os.MkdirTemp("", "warpkv-bin-")
		if build.err != nil {
			return
		}
		build.path = filepath.Join(build.dir, "warpkv")
		cmd := exec.Command(goTool, "build", "-o", build.path, "github.com/warpkv/warpkv/cmd/warpkv")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build github.com/warpkv/warpkv/cmd/warpkv: %v: %s", err, out)
		}
	})
	if build.err != nil {
		NeedTool(tb, build.err.Error())
	}
	return build.path
}

// NeedTool skips the test for a missing tool, or fails it under
// WARPKV_REQUIRE_TOOLS=1.
func NeedTool(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv(EnvRequireTools) == "1" {
		tb.Fatalf("tool required ($%s=1) but unavailable: %s", EnvRequireTools, why)
	}
	tb.Skipf("tool unavailable: %s", why)
}

// LookTool returns the path of an executable this project did not write
// (memccapable, nutcracker, ...), skipping the test without it (failing
// under WARPKV_REQUIRE_TOOLS=1). Debian installs some in /usr/sbin.
func LookTool(tb testing.TB, name string) string {
	tb.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	NeedTool(tb, name+" is not installed")
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Process is a running "warpkv serve".
type Process struct {
	Addr string // host:port it serves
	Cmd  *exec.Cmd
	log  *tailBuffer
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// Serve starts the warpkv binary's serve command with args after
// "serve -p 0" (a free port; a later -p overrides it) and returns once it
// accepts connections; the address comes from its "serving" log line. The
// process is killed when the test ends unless it has exited. Cost: one
// process start, under a second.
func Serve(tb testing.TB, args ...string) *Process {
	tb.Helper()
	return serve(tb, 0, args)
}

// ServeLimited is Serve with the open-file limit (soft and hard) of the
// process set to nofile, through sh's ulimit.
func ServeLimited(tb testing.TB, nofile int, args ...string) *Process {
	tb.Helper()
	return serve(tb, nofile, args)
}

func serve(tb testing.TB, nofile int, args []string) *Process {
	tb.Helper()
	bin := WarpkvBinary(tb)
	cmd := exec.Command(bin, append([]string{"serve", "-p", "0"}, args...)...)
	if nofile > 0 {
		script := fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile)
		cmd = exec.Command("/bin/sh", append([]string{"-c", script, bin, "serve", "-p", "0"}, args...)...)
	}
	p := &Process{Cmd: cmd, log: &tailBuffer{max: 64 << 10}, done: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		tb.Fatalf("pipe: %v", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	pw.Close()
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			p.log.Write([]byte(line + "\n"))
			if !sent && strings.Contains(line, "serving memcached protocols") {
				if i := strings.Index(line, "addr="); i >= 0 {
					addrc <- strings.Fields(line[i+len("addr="):])[0]
					sent = true
				}
			}
		}
		pr.Close()
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.Addr = <-addrc:
	case <-p.done:
		tb.Fatalf("warpkv serve %v exited before serving: %v\n%s", args, p.err, p.log.String())
	case <-time.After(30 * time.Second):
		tb.Fatalf("warpkv serve %v: no serving line after 30s:\n%s", args, p.log.String())
	}
	return p
}

// Log returns the last 64 KiB of the process's output.
func (p *Process) Log() string { return p.log.String() }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.Cmd.Process.Signal(sig) }

// Wait waits up to timeout for the process to exit and returns its exit
// code (-1 if killed by a signal) and whether it exited in time.
func (p *Process) Wait(timeout time.Duration) (int, bool) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return 0, false
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), true
	}
	return 0, true
}

// RSS returns the process's resident set size in bytes, from
// /proc/PID/status (VmRSS).
func (p *Process) RSS() (int64, error) { return ProcRSS(p.Cmd.Process.Pid) }

// ProcRSS returns the resident set size of process pid in bytes.
func ProcRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

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
