package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
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
	exe := buildWarpkv(t)
	port, err := freeTCPPort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "bench", "floor", "-p", strconv.Itoa(port), "-t", "4")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitListening(context.Background(), addr, exited, 30*time.Second); err != nil {
		t.Fatal(err)
	}
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
