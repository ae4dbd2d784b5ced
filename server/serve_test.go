package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

// startServer runs Serve on a free localhost port with engine ec and
// returns its address; the server shuts down at cleanup, and Serve must
// return nil.
func startServer(t *testing.T, ec engineCase, opts Options) string {
	t.Helper()
	return startServerConfig(t, ec, Config{Engine: opts})
}

// startServerConfig is startServer with the rest of Serve's Config (its
// Engine options, with ec's device, shards and search, its Addr, Version
// and Ready set here).
func startServerConfig(t *testing.T, ec engineCase, cfg Config) string {
	t.Helper()
	opts := cfg.Engine
	if ec.device != "cpu" {
		newTestEngine(t, ec, Options{}).Close() // skips without a GPU
	}
	opts.Device = ec.device
	opts.CPUShards = ec.shards
	opts.GPUSearch = ec.search
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() {
		cfg.Addr, cfg.Engine, cfg.Version, cfg.Ready = "127.0.0.1:0", opts, "1.6.18", func(a net.Addr) { ready <- a }
		errc <- Serve(ctx, cfg)
	}()
	select {
	case a := <-ready:
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("Serve did not return after shutdown")
			}
		})
		return a.String()
	case err := <-errc:
		cancel()
		t.Fatalf("Serve: %v", err)
	}
	return ""
}

// TestDifferentialAgainstMemcached sends random command sequences of the
// text, meta and binary protocols to a real memcached and to warpkv on
// each engine and requires identical replies (CAS values and stats aside).
func TestDifferentialAgainstMemcached(t *testing.T) {
	mc := difftest.Memcached(t)
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			addr := startServer(t, ec, Options{})
			cfg := difftest.Config{}
			if testing.Short() {
				cfg.Sequences = 20
			}
			difftest.Run(t, mc, addr, cfg)
		})
	}
}

// TestClientLibrary runs the gomemcache client scenarios against warpkv on
// each engine.
func TestClientLibrary(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			difftest.ClientSuite(t, startServer(t, ec, Options{}))
		})
	}
}

// TestProfileStats serves a few requests with the profile on: "stats
// profile" counts the ops and charges time to the protocol's and the
// engine's stages.
func TestProfileStats(t *testing.T) {
	addr := startServer(t, testEngines[0], Options{Profile: true})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "set a 0 0 1\r\nx\r\nget a b c\r\n")
	for _, want := range []string{"STORED\r\n", "VALUE a 0 1\r\n", "x\r\n", "END\r\n"} {
		if line, err := br.ReadString('\n'); err != nil || line != want {
			t.Fatalf("reply %q, %v; want %q", line, err, want)
		}
	}
	fmt.Fprintf(c, "stats profile\r\n")
	stats := map[string]int64{}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "END\r\n" && len(stats) > 0 {
			break
		}
		var name string
		var v int64
		if n, _ := fmt.Sscanf(line, "STAT %s %d", &name, &v); n == 2 {
			stats[name] = v
		}
	}
	if stats["ops"] != 4 {
		t.Errorf("ops = %d, want 4 (a set and a 3-key get)", stats["ops"])
	}
	for _, st := range []string{"parse", "cache", "render", "write", "hash", "search_wait", "items", "write_apply", "index_search"} {
		if stats[st+"_count"] == 0 || stats[st+"_ns"] <= 0 {
			t.Errorf("stage %s: count %d, %d ns; want both positive", st, stats[st+"_count"], stats[st+"_ns"])
		}
	}
}
