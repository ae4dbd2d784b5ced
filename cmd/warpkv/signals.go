package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals stop the server gracefully, as in memcached 1.6.18: SIGINT
// and SIGTERM (memcached's sig_handler), and SIGUSR1 (its "Gracefully
// stopping"). Each makes serve stop accepting, finish the running rounds
// and exit 0.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGUSR1}

// serveSignals returns a context that is cancelled by the first of
// stopSignals, and starts a goroutine that logs every SIGHUP instead of
// dying of it: memcached 1.6.18 ignores SIGHUP, so an operator's shell
// closing (or a log-rotation script's kill -HUP) does not stop the cache.
// warpkv writes its log to stderr and opens no log file, so there is
// nothing to reopen. Call stop to restore the default handling of every
// one of these signals. Cost: one goroutine and two signal channels.
func serveSignals(log *slog.Logger) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stopc := make(chan os.Signal, 1)
	signal.Notify(stopc, stopSignals...)
	hupc := make(chan os.Signal, 4)
	signal.Notify(hupc, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-stopc:
				log.Info("signal received: stopping gracefully", "signal", signalName(sig))
				cancel()
				// Later stop signals are delivered to stopc and
				// dropped: the shutdown is already under way and
				// bounded by its grace period.
			case sig := <-hupc:
				log.Info("signal received: ignored, as memcached does (logs go to stderr: nothing to reopen)", "signal", signalName(sig))
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(stopc)
		signal.Stop(hupc)
		close(done)
		cancel()
	}
}

// signalName returns the conventional name of the signals serve handles
// (SIGHUP, ...), the Go description of any other.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}
