package difftest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/protocol"
)

// serveModel serves a kv.Model through package protocol on a loopback
// port for the test and returns its address.
func serveModel(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	srv := protocol.NewServer(kv.NewModel(nil), protocol.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("protocol server shutdown: %v", err)
		}
		if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
			tb.Errorf("protocol server: %v", err)
		}
	})
	return ln.Addr().String()
}

func TestRunMemcachedAgainstProtocolModel(t *testing.T) {
	want := Memcached(t)
	cfg := Config{MaxDiffs: 50}
	if testing.Short() {
		cfg.Sequences = 20
	}
	Run(t, want, serveModel(t), cfg)
}

func TestClientSuiteProtocolModel(t *testing.T) {
	ClientSuite(t, serveModel(t))
}
