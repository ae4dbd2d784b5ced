package stm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/warpkv/warpkv/engine"
)

// TestRunContextStops runs a long CPU run and cancels it: the run stops
// soon after with an error wrapping the cancel, and the Engine runs again
// afterwards. A context done before the run stops it before it starts.
func TestRunContextStops(t *testing.T) {
	e, err := Open(Options{Device: "cpu", Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	w := Bank{Accounts: 64, Initial: 10}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	t0 := time.Now()
	_, err = e.RunContext(ctx, w, RunOptions{Duration: time.Minute, Seed: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v, want context.Canceled", err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Fatalf("cancelled run took %v", d)
	}
	if _, err := e.RunContext(ctx, w, RunOptions{Transactions: 10, Seed: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("run with a done context: %v, want context.Canceled", err)
	}
	res, err := e.Run(w, RunOptions{Transactions: 100, Seed: 1})
	if err != nil || res.Total() != 100 {
		t.Fatalf("run after a cancelled one: %v, %v", res, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(w, RunOptions{Transactions: 10}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("run after Close: %v, want engine.ErrClosed", err)
	}
}
