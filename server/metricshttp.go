package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsServer serves /metrics over HTTP in the Prometheus text format.
type metricsServer struct {
	http *http.Server
	ln   net.Listener
	done chan error
}

// startMetrics listens on addr and serves the collector's metrics, with the
// Go runtime's and the process's, at /metrics. Nothing is computed between
// scrapes. Cost: one goroutine and a listener.
func startMetrics(addr string, c prometheus.Collector, log *slog.Logger) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("server: metrics: register: %w", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server: metrics: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
	m := &metricsServer{
		http: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { m.done <- m.http.Serve(ln) }()
	log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	return m, nil
}

// close stops the metrics server, waiting up to a second for scrapes in
// flight.
func (m *metricsServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := m.http.Shutdown(ctx)
	if serr := <-m.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("server: metrics: shutdown: %w", err)
	}
	return nil
}
