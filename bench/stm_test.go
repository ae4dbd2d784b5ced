package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/stm"
)

// TestRunSTMSmall runs the stm suite on the CPU engine at a tiny size: every
// case gives a row with commits and a note with its aborts.
func TestRunSTMSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every case for 200ms")
	}
	rep, err := RunSTM(Options{Device: "cpu", Size: 200, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	cpuCases := 0
	for _, c := range STMCases(200) {
		if !c.GPUOnly {
			cpuCases++
		}
	}
	if len(rep.Results) != cpuCases {
		t.Fatalf("%d rows, want %d", len(rep.Results), cpuCases)
	}
	for _, r := range rep.Results {
		if r.Engine != "cpu" || r.Items == 0 || r.OpsPerSec <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "aborts ") {
		t.Error("no notes on aborts")
	}
	timed := 0
	for _, n := range rep.Notes {
		if strings.Contains(n, "; commit latency p50/p99/p99.9 ") {
			timed++
		}
	}
	if timed != cpuCases {
		t.Errorf("%d notes with a commit latency, want one per case (%d)", timed, cpuCases)
	}
}

func TestSTMCaseNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range STMCases(STMBigBank) {
		if seen[c.Name()] {
			t.Errorf("two cases named %q", c.Name())
		}
		seen[c.Name()] = true
	}
	for _, want := range []string{"bank 6k, 90% ro of 100, 1 round", "bank 1M, 0% ro of all, 1 round", "memcached 1M slots, 256 ways, 99.8% GET", "bank 1M, 0% ro of 100, 64 rounds", "bank 1M, 0% ro of 100, 1 round, 8 servers"} {
		if !seen[want] {
			t.Errorf("no case %q", want)
		}
	}
}

// TestSTMRunNoteConflictSites: a direct-commit run's note says where its
// conflicts were found, the rest being newer writes met at validation; a
// run through the servers says nothing of it.
func TestSTMRunNoteConflictSites(t *testing.T) {
	r := STMRun{Direct: true, Threads: 64}
	r.Stats.Commits = 100
	r.Stats.Aborts[stm.ReadWrite] = 90
	r.Stats.Aborts[stm.WriteWrite] = 10
	r.Stats.Aborts[stm.SnapshotTooOld] = 7
	r.Server.InWarp, r.Server.LockMet, r.Server.Refreshed = 30, 10, 20
	r.Server.Rounds, r.Server.RoundTime = 4, 100*time.Microsecond
	r.Server.Deferred = 5
	want := "conflicts found: 30 by the in-warp check, 10 on a held lock, 20 stale after the body, 40 on a newer write at validation; 5 attempts held back at their locks; 4 client warp rounds of 25µs"
	if got := r.Note("bank", "csmv gpu"); !strings.Contains(got, want) {
		t.Errorf("note %q\nwant it to contain %q", got, want)
	}
	r.Direct = false
	if got := r.Note("bank", "csmv gpu"); strings.Contains(got, "conflicts found") {
		t.Errorf("a run through the servers: note %q", got)
	}
}
