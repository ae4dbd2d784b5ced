package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/warpkv/warpkv/loadgen"
)

// TestFloorServerAnswersEveryLoop starts the built binary's floor server
// with four loops and a real client library (gomemcache): a value set on
// one connection is what gets on every other connection answer with,
// whichever loop the kernel gave each connection to (SO_REUSEPORT), and
// flush_all empties them all.
func TestFloorServerAnswersEveryLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds warpkv and starts its floor server")
	}
	addr, _ := startFloorServer(t, 4)
	setter := memcache.New(addr)
	if err := setter.Set(&memcache.Item{Key: "k", Value: []byte("0123456789abcdef")}); err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		c := memcache.New(addr) // a client of its own: a connection of its own
		it, err := c.Get(fmt.Sprint("key", i))
		if err != nil || string(it.Value) != "0123456789abcdef" {
			t.Fatalf("connection %d: get = %v, %v; want the value set on another connection", i, it, err)
		}
		c.Close()
	}
	if err := setter.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := memcache.New(addr).Get("k"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("get after flush_all: %v, want a miss", err)
	}
}

// TestFloorServerHoldsRepliesForASlowReader: a client that sends many
// gets of a large value and does not read fills its socket, so the floor
// server holds the rest of its replies; the client then half-closes and
// waits without reading, which must not wake the server's loop over and
// over (its CPU time stays near zero); once the client reads, every reply
// arrives, and the server closes the connection after the last.
func TestFloorServerHoldsRepliesForASlowReader(t *testing.T) {
	if testing.Short() {
		t.Skip("builds warpkv and starts its floor server")
	}
	addr, pid := startFloorServer(t, 1)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	value := strings.Repeat("v", 4000)
	const gets = 5000 // about 20 MB of replies
	req := fmt.Sprintf("set k 0 0 %d noreply\r\n%s\r\n", len(value), value) + strings.Repeat("get k\r\n", gets)
	if _, err := nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	nc.(*net.TCPConn).CloseWrite()
	time.Sleep(200 * time.Millisecond) // the replies back up
	before := processCPU(t, pid)
	time.Sleep(500 * time.Millisecond)
	if spent := processCPU(t, pid) - before; spent > 200*time.Millisecond {
		t.Errorf("the server used %v of CPU in 500ms while its client neither read nor wrote", spent)
	}
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("reading the replies: %v (after %d bytes)", err, len(b))
	}
	if n := strings.Count(string(b), "END\r\n"); n != gets {
		t.Errorf("%d replies of %d gets (%d bytes)", n, gets, len(b))
	}
}

// startFloorServer starts the built binary's floor server with loops
// event loops on a free port, killed when the test ends, and returns its
// address and process id once it accepts connections.
func startFloorServer(t *testing.T, loops int) (addr string, pid int) {
	t.Helper()
	exe := buildWarpkv(t)
	port, err := freeTCPPort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "bench", "floor", "-p", strconv.Itoa(port), "-t", strconv.Itoa(loops))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitListening(context.Background(), addr, exited, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return addr, cmd.Process.Pid
}

// processCPU is loadgen.ProcessCPU, failing the test on an error.
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, err := loadgen.ProcessCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
