package bankpeer

import (
	"testing"
	"time"

	"github.com/warpkv/warpkv/stm"
)

// TestPeersKeepTheInvariant runs the lock-based peers with more goroutines
// than cores: every total right, money conserved.
func TestPeersKeepTheInvariant(t *testing.T) {
	b := stm.Bank{Accounts: 64, Initial: 10, ReadOnly: 0.3, ReadSize: 8, Rounds: 3}
	for _, p := range []Peer{NewGlobalLock(b), NewItemLock(b)} {
		r, err := RunFor(p, b, 1, 8, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if r.Stats.Total() == 0 {
			t.Fatalf("%s committed nothing", p.Name())
		}
		if r.Workers != 8 {
			t.Fatalf("%s: %d workers, want 8", p.Name(), r.Workers)
		}
	}
}
