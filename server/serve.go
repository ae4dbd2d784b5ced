package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/warpkv/warpkv/protocol"
)

// Config configures Serve: the engine and the network front.
type Config struct {
	// Addr is the TCP address to listen on; "" means 127.0.0.1:11211
	// (unless UnixSocket is set).
	Addr string
	// Addrs are further TCP addresses to listen on (memcached's -l with
	// several addresses); every listener feeds the same event loops.
	Addrs []string
	// Inter is "stats settings" inter as memcached 1.6.18 prints it: the
	// -l interfaces as given, comma separated (a host name, not the
	// addresses it resolves to); "" means the listeners' addresses.
	Inter string
	// UnixSocket, when set, is the path of a unix stream socket to listen
	// on instead of TCP (memcached's -s, which disables network support);
	// a stale socket file there is replaced.
	UnixSocket string
	// UnixMask is the socket file's permission bits (memcached's -a); the
	// zero FileMode means 0700, and os.ModeSocket alone (the type bit
	// with no permission bits) asks for none (-a 0). Only the permission
	// bits are applied.
	UnixMask os.FileMode
	// Engine configures the key-value engine.
	Engine Options
	// MaxConns bounds simultaneous connections (memcached -c); 0 means
	// 1024.
	MaxConns int
	// Version is warpkv's own version, reported as warpkv_version by
	// stats; the version command answers the memcached version whose
	// protocol warpkv speaks (protocol.DefaultVersion), which clients parse.
	Version string
	// IdleTimeout closes connections idle for that long (memcached's -o
	// idle_timeout); 0 means never.
	IdleTimeout time.Duration
	// Loops is the number of event loops serving connections
	// (protocol.Config.Loops): 0 means the protocol's default, negative
	// a goroutine per connection.
	Loops int
	// RoundConns bounds the connections an event loop runs as one cache
	// batch (protocol.Config.RoundConns). 0 means the engine's default:
	// InlineRoundConns when the engine searches inline (the CPU engine),
	// whose batches gain nothing from size; a whole round where searches
	// are batched (GPU shards), whose fixed cost per batch a round shares.
	RoundConns int
	// LoopWait is how an idle event loop waits for its connections:
	// LoopWaitPark (the goroutine parks in the Go runtime's poller) or
	// LoopWaitBlock (its thread blocks in epoll_wait, as memcached's do);
	// "" means the engine's default, block (see loopWaitDefault).
	LoopWait string
	// LoopSpin, if positive, is how long an event loop polls its
	// connections without waiting after a round before it waits as
	// LoopWait says (protocol.Config.SpinWait); 0 never spins.
	LoopSpin time.Duration
	// LoopIO is how the event loops make their system calls
	// (protocol.Config.LoopIO): protocol.LoopIOEpoll ("" means it),
	// protocol.LoopIOUring or protocol.LoopIOUringPoll.
	LoopIO string
	// Logger receives the server's messages; nil means slog.Default().
	Logger *slog.Logger
	// MetricsAddr, if set, is the TCP address of an HTTP server giving
	// /metrics in the Prometheus text format (see metricsCollector);
	// "" serves none.
	MetricsAddr string
	// Ready, if set, is called with the listening address once the server
	// accepts connections.
	Ready func(addr net.Addr)
}

// InlineRoundConns is the default Config.RoundConns of an engine that
// searches inline. Measured on an H200 host (8 server cores, one request
// in flight per connection, BENCHMARKS.md): groups of 4 served 64
// connections 1.10x (100:0) and 0.99x (95:5) memcached's throughput where
// whole rounds served 0.91x and 0.86x, at about the same rates at 512
// connections; groups of 1 fell between.
const InlineRoundConns = 4

// Idle event loops' waits (Config.LoopWait, serve --loop-wait).
const (
	LoopWaitPark  = "park"
	LoopWaitBlock = "block"
)

// loopWaitDefault returns the LoopWait the event loops run with: w, or
// block when it is empty, on both engines. On the CPU engine, whose loops
// wait for no other goroutine, blocking served 1.09x/1.16x the throughput
// of parking at 64/512 connections (100:0) with 1.2-1.7 µs less server CPU
// per request in one run on an H200 host and 0.93-1.00x in a second. GPU
// shards parked until 2026-11-29, when with callers launching their
// search batches blocking measured 0.99x-1.33x parking's throughput with
// one request in flight at 64, 512 and 4096 connections, 1.07x and 0.97x
// pipelined, and a 1.5x-5.7x lower p99 paced at 64 connections
// (BENCHMARKS.md, "GPU engine loops blocking in epoll_wait").
func loopWaitDefault(w string) string {
	if w != "" {
		return w
	}
	return LoopWaitBlock
}

// roundConns returns the RoundConns the event loops run with: rc, or
// when it is zero the engine's default.
func roundConns(rc int, eng *Engine) int {
	if rc == 0 && eng.InlineSearch() {
		return InlineRoundConns
	}
	return rc
}

// Serve starts an engine and serves the memcached protocols on cfg.Addr
// until ctx is done, then shuts down cleanly: it stops accepting, finishes
// the requests in flight, flushes their replies, closes the connections and
// frees the engine.
func Serve(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Addr == "" && cfg.UnixSocket == "" {
		cfg.Addr = "127.0.0.1:11211"
	}
	cfg.Engine.Logger = log
	eng, err := New(cfg.Engine)
	if err != nil {
		return err
	}
	defer eng.Close()
	log.Info("engine ready", "engine", eng.Backend(), "reason", eng.Reason(), "shards", eng.Shards(),
		"interval", eng.Interval(), "memory_limit", eng.opts.MemoryLimit)
	lns, err := listen(cfg)
	if err != nil {
		return err
	}
	ln := lns[0]
	rounds, wait := roundConns(cfg.RoundConns, eng), loopWaitDefault(cfg.LoopWait)
	srv := protocol.NewServer(eng, protocol.Config{
		ItemSizeMax:  eng.opts.ItemSizeMax,
		MaxConns:     cfg.MaxConns,
		Stats:        []kvStat{{Name: "warpkv_version", Value: cfg.Version}},
		Logger:       log,
		Settings:     settingsOf(lns, cfg, rounds, wait),
		Stages:       eng.StageClock(),
		IdleTimeout:  cfg.IdleTimeout,
		Loops:        cfg.Loops,
		RoundConns:   rounds,
		BlockingWait: wait == LoopWaitBlock,
		SpinWait:     cfg.LoopSpin,
		LoopIO:       cfg.LoopIO,
		// Half-sent requests count inside the item memory limit (past one
		// largest request): they take pages from the stored items, and are
		// refused when they would leave the items less than an eighth of
		// it (heldValues).
		MaxPendingBytes: eng.opts.MemoryLimit,
		PendingBudget:   newHeldValues(eng.store, int64(max(eng.opts.ItemSizeMax, protocol.DefaultMaxGetLine))+64<<10),
	})
	if cfg.MetricsAddr != "" {
		ms, err := startMetrics(cfg.MetricsAddr, newMetricsCollector(eng, srv, time.Now(), cfg.Version, cfg.MaxConns), log)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return err
		}
		defer ms.close()
	}
	errc := make(chan error, len(lns))
	for _, l := range lns {
		go func() { errc <- srv.Serve(l) }()
		log.Info("serving memcached protocols", "addr", l.Addr().String())
	}
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("server: serve: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	for range lns {
		if serr := <-errc; serr != nil && !errors.Is(serr, net.ErrClosed) {
			err = errors.Join(err, serr)
		}
	}
	if err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// listen opens the listeners of cfg: its unix socket, or its TCP
// addresses (Addr, then Addrs). On an error it closes those it opened.
func listen(cfg Config) ([]net.Listener, error) {
	if cfg.UnixSocket != "" {
		mask := cfg.UnixMask
		if mask == 0 {
			mask = 0o700
		}
		if fi, err := os.Lstat(cfg.UnixSocket); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(cfg.UnixSocket) // a stale socket, as memcached replaces it
		}
		ln, err := net.Listen("unix", cfg.UnixSocket)
		if err != nil {
			return nil, fmt.Errorf("server: listen: %w", err)
		}
		if err := os.Chmod(cfg.UnixSocket, mask.Perm()); err != nil {
			ln.Close()
			return nil, fmt.Errorf("server: unix socket permissions: %w", err)
		}
		return []net.Listener{ln}, nil
	}
	var lns []net.Listener
	for _, a := range append([]string{cfg.Addr}, cfg.Addrs...) {
		l, err := listenTCP(a, net.DefaultResolver.LookupIPAddr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("server: listen: %w", err)
		}
		lns = append(lns, l...)
	}
	return lns, nil
}

// anyHost is the -l host that names every interface, as memcached
// 1.6.18 takes it ("-l '*'", or "*:PORT"): its passive addresses,
// listenTCP's anyAddrs.
const anyHost = "*"

// anyAddrs are the addresses of anyHost: IPv4's and IPv6's wildcard, the
// passive addresses memcached's getaddrinfo(NULL) gives (0.0.0.0 and ::,
// each its own socket).
func anyAddrs(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.IPv4zero}, {IP: net.IPv6unspecified}}, nil
}

// listenTCP listens on host:port addr as memcached 1.6.18's server_socket:
// on each address a host name resolves to (lookup), an address already in
// use left out unless no address could be listened on; on an IP address
// alone otherwise; on 0.0.0.0 and :: for the host "*" (anyHost), where
// a family the machine lacks is left out as memcached leaves out an
// address it cannot make a socket for. On an error it closes those it
// opened. Cost: one lookup for a host name, one listen an address.
func listenTCP(addr string, lookup func(context.Context, string) ([]net.IPAddr, error)) ([]net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) != nil {
		ln, err := net.Listen(tcpNetwork(addr), addr)
		if err != nil {
			return nil, err
		}
		return []net.Listener{ln}, nil
	}
	if host == anyHost {
		lookup = anyAddrs
	}
	ips, err := lookup(context.Background(), host)
	if err != nil {
		return nil, err
	}
	var lns []net.Listener
	var skipped error // the last address left out (in use, or a family the machine lacks)
	for _, ip := range ips {
		a := net.JoinHostPort(ip.String(), port)
		ln, err := net.Listen(tcpNetwork(a), a)
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			skipped = err
		case host == anyHost && (errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EADDRNOTAVAIL)):
			skipped = err // no such family here (IPv6 off)
		case err != nil:
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("%s: %w", host, err)
		default:
			lns = append(lns, ln)
		}
	}
	if len(lns) == 0 {
		if skipped == nil {
			skipped = fmt.Errorf("no address")
		}
		return nil, fmt.Errorf("%s: %w", host, skipped)
	}
	return lns, nil
}

// tcpNetwork returns the network to listen on host:port addr with, as
// memcached 1.6.18 listens: "tcp4" for an IPv4 address (so 0.0.0.0 is
// IPv4's interfaces only, not Go's dual-stack socket that takes IPv6
// clients too), "tcp6" for an IPv6 one (IPV6_V6ONLY, which memcached sets
// on its IPv6 sockets); listenTCP resolves a host name first.
func tcpNetwork(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	switch {
	case err != nil || ip == nil:
		return "tcp"
	case ip.To4() != nil:
		return "tcp4"
	}
	return "tcp6"
}

// settingsOf returns the network settings for "stats settings", named and
// written as memcached 1.6.18's: tcpport (the -p port, under -s too),
// udpport (0: no UDP), inter (Config.Inter, else the TCP interfaces
// listened on, an interface's :port only where it differs from tcpport;
// NULL under -s),
// maxconns, domain_socket (NULL without -s) and umask (the -a mask in
// octal); then the event loops' round groups (warpkv_round_conns, 0:
// whole rounds), wait and spin.
func settingsOf(lns []net.Listener, cfg Config, roundConns int, loopWait string) []kvStat {
	port, inter, socket := "", "NULL", "NULL"
	if _, p, err := net.SplitHostPort(cfg.Addr); err == nil {
		port = p
	}
	if cfg.UnixSocket != "" {
		socket = cfg.UnixSocket
	} else {
		var ifs []string
		for _, ln := range lns {
			t, ok := ln.Addr().(*net.TCPAddr)
			if !ok {
				continue
			}
			p := strconv.Itoa(t.Port)
			if len(ifs) == 0 {
				port = p
			}
			if p == port {
				ifs = append(ifs, t.IP.String())
			} else {
				ifs = append(ifs, net.JoinHostPort(t.IP.String(), p))
			}
		}
		switch {
		case cfg.Inter != "": // the -l argument as given, as memcached prints it
			inter = cfg.Inter
		case len(ifs) > 0:
			inter = strings.Join(ifs, ",")
		}
	}
	maxConns := cfg.MaxConns
	if maxConns == 0 {
		maxConns = 1024
	}
	mask := cfg.UnixMask
	if mask == 0 {
		mask = 0o700
	}
	return []kvStat{{Name: "tcpport", Value: port}, {Name: "udpport", Value: "0"}, {Name: "inter", Value: inter},
		{Name: "maxconns", Value: strconv.Itoa(maxConns)}, {Name: "domain_socket", Value: socket},
		{Name: "umask", Value: strconv.FormatUint(uint64(mask.Perm()), 8)},
		{Name: "warpkv_round_conns", Value: strconv.Itoa(roundConns)}, {Name: "warpkv_loop_wait", Value: loopWait},
		{Name: "warpkv_loop_spin", Value: cfg.LoopSpin.String()}}
}
