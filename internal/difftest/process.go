package difftest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
