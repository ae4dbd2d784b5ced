package stm

import (
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestRerunGPU runs contended cases with the servers' re-runs of
// conflicting update attempts (Options.Rerun), with contention management
// off (every conflicting attempt reaches a server) and at its default,
// checks every run end to end as TestContendedGPU does (serial replay of
// the history, opacity of every recorded attempt, totals, every ticket
// committed once), that no more attempts were re-run than committed, and
// that the hot blocks' run of many warps with contention off re-ran some.
func TestRerunGPU(t *testing.T) {
	dev := gputest.Device(t)
	for _, c := range contendedCases() {
		switch c.name {
		case "hot accounts", "all transactions on one item", "write-only transactions", "hot blocks (zipf 0.99), 2 rounds",
			"four servers, transfers across partitions", "zipf read-modify-write", "bank, read-only blocks of 16",
			"ring depth 1", "transactions larger than the log", "memcached 8 ways":
		default:
			continue
		}
		for _, x := range []struct {
			mode  Contention
			rerun RerunMode
		}{{ContentionOff, RerunItems}, {ContentionOff, RerunClock}, {ContentionDefault, RerunItems}} {
			mode := x.mode
			t.Run(c.name+", contention "+mode.String()+", rerun "+x.rerun.String(), func(t *testing.T) {
				res := runContendedGPU(t, Options{GPU: dev, Config: c.cfg, Contention: mode, Rerun: x.rerun}, c)
				if res.Server.Rerun > res.Commits {
					t.Errorf("%d attempts re-run by the servers, %d update commits", res.Server.Rerun, res.Commits)
				}
				if mode == ContentionOff && c.name == "hot blocks (zipf 0.99), 2 rounds" && res.Threads > 32 && res.Server.Rerun == 0 {
					t.Errorf("%d threads on hot blocks: no attempt re-run by the servers (aborts %s)", res.Threads, res.AbortString())
				}
				t.Logf("%d threads, %d servers, aborts %s, %d re-run by the servers", res.Threads, res.Servers, res.AbortString(), res.Server.Rerun)
			})
		}
	}
}

// TestRerunUnderHotAccounts runs 1-round transfers on 64K hot accounts
// (runHotBank) with the servers' re-runs, contention management off and
// at its default: the bank's total holds, and each run's commits per
// second, abort rate and re-runs are logged beside a run without them.
func TestRerunUnderHotAccounts(t *testing.T) {
	dev := gputest.Device(t)
	for _, o := range []struct {
		what string
		opt  Options
	}{
		{"default", Options{GPU: dev}},
		{"rerun items, contention off", Options{GPU: dev, Rerun: RerunItems, Contention: ContentionOff}},
		{"rerun clock, contention off", Options{GPU: dev, Rerun: RerunClock, Contention: ContentionOff}},
		{"rerun items", Options{GPU: dev, Rerun: RerunItems}},
	} {
		res := runHotBank(t, o.opt, o.what)
		t.Logf("%s: %.3g commits/s, %d threads, abort rate %.1f%% (%s), %d re-run by the servers, %d held back",
			o.what, res.Throughput(), res.Threads, 100*res.AbortRate(), res.AbortString(), res.Server.Rerun, res.Server.Deferred)
	}
}
