package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/warpkv/warpkv/protocol"
)

// Config configures Serve: the engine and the network front.
type Config struct {
	// Addr is the TCP address to listen on; "" means 127.0.0.1:11211.
	Addr string
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

// Serve starts an engine and serves the memcached protocols on cfg.Addr
// until ctx is done, then shuts down cleanly: it stops accepting, finishes
// the requests in flight, flushes their replies, closes the connections and
// frees the engine.
func Serve(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Addr == "" {
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
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	srv := protocol.NewServer(eng, protocol.Config{
		ItemSizeMax: eng.opts.ItemSizeMax,
		MaxConns:    cfg.MaxConns,
		Stats:       []kvStat{{Name: "warpkv_version", Value: cfg.Version}},
		Logger:      log,
		Settings:    settingsOf(ln.Addr(), cfg),
		Stages:      eng.StageClock(),
		IdleTimeout: cfg.IdleTimeout,
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
			ln.Close()
			return err
		}
		defer ms.close()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving memcached protocols", "addr", ln.Addr().String())
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
	if serr := <-errc; serr != nil && !errors.Is(serr, net.ErrClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// settingsOf returns the network settings for "stats settings".
func settingsOf(addr net.Addr, cfg Config) []kvStat {
	port := ""
	if t, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(t.Port)
	}
	maxConns := cfg.MaxConns
	if maxConns == 0 {
		maxConns = 1024
	}
	return []kvStat{{Name: "tcpport", Value: port}, {Name: "udpport", Value: "0"}, {Name: "maxconns", Value: strconv.Itoa(maxConns)}}
}
