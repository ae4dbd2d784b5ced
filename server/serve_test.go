package server

import (
	"context"
	"net"
	"testing"
	"time"

	"warpkv/internal/difftest"
)

// startServer runs Serve on a free localhost port with engine ec and
// returns its address; the server shuts down at cleanup, and Serve must
// return nil.
func startServer(t *testing.T, ec engineCase, opts Options) string {
	t.Helper()
	if ec.device != "cpu" {
		newTestEngine(t, ec, Options{}).Close() // skips without a GPU
	}
	opts.Device = ec.device
	opts.CPUShards = ec.shards
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- Serve(ctx, Config{Addr: "127.0.0.1:0", Engine: opts, Version: "1.6.18", Ready: func(a net.Addr) { ready <- a }})
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
