package server

import (
	"testing"

	"github.com/warpkv/warpkv/kv"
)

// TestDropsRetiredWhileUpdatesWait checks that a scheduler step retires
// the locations the index dropped even when more updates are queued and
// no search batch runs: a client that sends its next set as soon as the
// last is acknowledged leaves the scheduler no idle step, and with index
// updates slower than the sets (a GPU shared with other processes'
// kernels) the replaced items used to stay allocated until the next read
// (a 16 MB server evicted a third of a round of 1 KB sets that way on an
// H200: cmd/warpkv's TestFlushThenShift). The test holds the shards' roles,
// as the scheduler does in a step, with a dropped location and an update
// queued, and runs one step of the set's shard.
func TestDropsRetiredWhileUpdatesWait(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			e := newTestEngine(t, ec, Options{Interval: 1 << 40}) // updates never due by time
			for _, sh := range e.shards {
				sh.role.Lock()
				defer sh.role.Unlock()
				// A location no item holds: its unlink finds nothing.
				sh.deferUnlinks([]pendingUnlink{{loc: 1, hash: 12345, match: matchHash}})
			}
			do(t, e, kv.Op{Kind: kv.Set, Key: []byte("k"), Value: []byte("v")})
			var sh *shard
			nu := 0
			for _, x := range e.shards {
				x.mu.Lock()
				if n := x.upd.jobs(); n > 0 {
					sh, nu = x, n
				}
				x.mu.Unlock()
			}
			if sh == nil {
				t.Fatal("the set's update was applied while the test held every shard's role")
			}
			sh.step()
			sh.mu.Lock()
			np := len(sh.pending)
			sh.mu.Unlock()
			if np != 0 {
				t.Fatalf("%d dropped locations still pending after a step with %d updates queued: they wait for a search batch or a lull", np, nu)
			}
		})
	}
}
