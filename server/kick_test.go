package server

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// TestKickOnlyWhenOverdue checks shard.kick's decision: it kicks (wakes
// the scheduler and moves the due time to now, so that other callers kick
// again only kickSlack later) only when updates are queued and overdue by
// kickSlack, and never when kicks are off.
func TestKickOnlyWhenOverdue(t *testing.T) {
	const now = int64(1_000_000_000)
	slack := int64(250 * time.Microsecond)
	cases := []struct {
		name string
		due  int64 // 0: no update queued
		want bool
	}{
		{"nothing queued", 0, false},
		{"not due yet", now + 1, false},
		{"due, within the slack", now - slack + 1, false},
		{"overdue by the slack", now - slack, true},
		{"long overdue", now - 100*slack, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &shard{wake: make(chan struct{}, 1), kickSlack: slack}
			s.updDue.Store(c.due)
			if got := s.kick(now); got != c.want {
				t.Fatalf("kick = %v, want %v", got, c.want)
			}
			woken := len(s.wake) == 1
			switch {
			case c.want && (!woken || s.updDue.Load() != now):
				t.Fatalf("kicked: woken %v, due %d, want woken and due %d", woken, s.updDue.Load(), now)
			case !c.want && (woken || s.updDue.Load() != c.due):
				t.Fatalf("not kicked: woken %v, due %d, want neither changed (due %d)", woken, s.updDue.Load(), c.due)
			}
			if c.want && s.kick(now+slack-1) {
				t.Fatal("a second caller within kickSlack of the kick kicked again")
			}
			if c.want && !s.kick(now+slack) {
				t.Fatal("no kick kickSlack after the last one, the updates still queued")
			}
			off := &shard{wake: make(chan struct{}, 1)}
			off.updDue.Store(c.due)
			if off.kick(now) || len(off.wake) != 0 || off.updDue.Load() != c.due {
				t.Fatal("kicked with kicks off (kickSlack 0)")
			}
		})
	}
}

// TestUpdatesKeepUpWithBusyCallers runs a writer in a tight loop of Do
// calls that never block (as an event loop under pipelined load) on the
// only processor: the scheduler's update rounds must still come about
// every millisecond (the policy's interval), not only when the runtime
// preempts the writer (every 10 ms). On the 2-core VM a shard had 42-51
// rounds a second without the kicks, 272 to over 2000 with them (the
// lowest under -race on a loaded machine), so the bound is 150. The package's tests do
// not run in parallel, so the test may set GOMAXPROCS.
func TestUpdatesKeepUpWithBusyCallers(t *testing.T) {
	for _, ec := range testEngines[:2] { // the CPU engine's inline searches, one and three shards
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{UpdateKick: 250 * time.Microsecond})
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() {
				val := []byte("value")
				ops := make([]kv.Op, 2)
				for i := 0; !stop.Load(); i++ {
					ops[0] = kv.Op{Kind: kv.Set, Key: fmt.Appendf(nil, "busy%d", i%1000), Value: val}
					ops[1] = kv.Op{Kind: kv.Get, Key: fmt.Appendf(nil, "busy%d", (i*7)%1000)}
					if err := eng.Do(&kv.Batch{Ops: ops}); err != nil {
						t.Error(err)
						return
					}
				}
			})
			time.Sleep(20 * time.Millisecond)
			rounds0 := updateRounds(t, eng)
			start := time.Now()
			time.Sleep(300 * time.Millisecond)
			rounds := updateRounds(t, eng) - rounds0
			elapsed := time.Since(start)
			stop.Store(true)
			wg.Wait()
			perSec := float64(rounds) / elapsed.Seconds() / float64(len(eng.shards))
			t.Logf("%d update rounds in %v (%.0f/s a shard)", rounds, elapsed, perSec)
			if perSec < 150 {
				t.Fatalf("%.0f update rounds a second a shard beside a busy writer, want at least 150", perSec)
			}
		})
	}
}

// updateRounds returns the engine's index_update_rounds.
func updateRounds(t *testing.T, eng *Engine) uint64 {
	t.Helper()
	st, _ := eng.Stats("")
	for _, s := range st {
		if s.Name == "index_update_rounds" {
			n, err := strconv.ParseUint(s.Value, 10, 64)
			if err != nil {
				t.Fatalf("index_update_rounds %q: %v", s.Value, err)
			}
			return n
		}
	}
	t.Fatal("no index_update_rounds in stats")
	return 0
}
