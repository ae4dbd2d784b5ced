package stm

import (
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// serverCommitCases are the contended cases TestServerCommitGPU runs with
// the servers' share of commits, each with the mode and contention
// management it runs them under: hot items (re-runs), transactions of
// several partitions (written back by their clients), logs too small for
// a request (entries logged one at a time), larger transactions than one
// table load (not re-run), blind writes, one version per item.
var serverCommitCases = []struct {
	name string
	mode ServerCommit
	cm   Contention
}{
	{"hot blocks (zipf 0.99), 2 rounds", ServerCommitRetry, ContentionOff},
	{"hot blocks (zipf 0.99), 2 rounds", ServerCommitRetry, ContentionDefault},
	{"hot blocks (zipf 0.99), 2 rounds", ServerCommitWriteBack, ContentionDefault},
	{"hot accounts", ServerCommitRetry, ContentionOff},
	{"all transactions on one item", ServerCommitRetry, ContentionOff},
	{"write-only transactions", ServerCommitRetry, ContentionOff},
	{"zipf read-modify-write", ServerCommitRetry, ContentionOff},
	{"four servers, transfers across partitions", ServerCommitRetry, ContentionOff},
	{"four servers, transfers across partitions", ServerCommitWriteBack, ContentionOff},
	{"transactions larger than the log", ServerCommitWriteBack, ContentionOff},
	{"transfers larger than a table load", ServerCommitRetry, ContentionOff},
	{"ring depth 1", ServerCommitRetry, ContentionOff},
	{"memcached 8 ways", ServerCommitRetry, ContentionOff},
}

// serverCommitGPUCases are TestServerCommitGPU's runs (serverCommitCases).
func serverCommitGPUCases(dev *gpu.Device) ([]gpuCase, error) {
	cases := map[string]runCase{}
	for _, c := range contendedCases() {
		cases[c.name] = c
	}
	var out []gpuCase
	for _, x := range serverCommitCases {
		c, ok := cases[x.name]
		if !ok {
			return nil, fmt.Errorf("no contended case %q", x.name)
		}
		out = append(out, gpuCase{c.name + ", " + x.mode.String() + ", contention " + x.cm.String(),
			Options{GPU: dev, Config: c.cfg, Contention: x.cm, ServerCommit: x.mode}, c})
	}
	return out, nil
}

// TestServerCommitGPU runs contended cases with the servers' share of
// commits (Options.ServerCommit) and checks every run end to end as
// TestContendedGPU does (serial replay of the history, opacity of every
// recorded attempt, totals, every ticket committed once), that no more
// attempts were re-run than committed (none without re-runs), and that the
// hot cases of many warps with contention off re-ran some.
func TestServerCommitGPU(t *testing.T) {
	cases, err := serverCommitGPUCases(gpuDevice(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range cases {
		t.Run(x.name, func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			reruns := x.o.ServerCommit == ServerCommitRetry
			if res.Server.Rerun > res.Commits || (!reruns && res.Server.Rerun != 0) {
				t.Errorf("%d attempts re-run by the servers, %d update commits", res.Server.Rerun, res.Commits)
			}
			hot := x.c.name == "hot blocks (zipf 0.99), 2 rounds" || x.c.name == "all transactions on one item"
			if reruns && x.o.Contention == ContentionOff && hot && res.Threads > 32 && res.Server.Rerun == 0 {
				t.Errorf("%d threads on hot items: no attempt re-run by the servers (aborts %s)", res.Threads, res.AbortString())
			}
			t.Logf("%d threads, %d servers, aborts %s, %d re-run by the servers; %v", res.Threads, res.Servers, res.AbortString(), res.Server.Rerun, res.Server)
		})
	}
}

// serverCommitHotOptions are TestServerCommitUnderHotAccounts' engines,
// each named.
func serverCommitHotOptions(dev *gpu.Device) []namedOptions {
	return []namedOptions{
		{"off", Options{GPU: dev, Commit: CommitServers}},
		{"writeback", Options{GPU: dev, ServerCommit: ServerCommitWriteBack}},
		{"retry", Options{GPU: dev, ServerCommit: ServerCommitRetry}},
		{"retry, contention off", Options{GPU: dev, ServerCommit: ServerCommitRetry, Contention: ContentionOff}},
	}
}

// TestServerCommitUnderHotAccounts runs 1-round transfers on 64K hot
// accounts (runHotBank) with each ServerCommit mode, contention
// management off and at its default: the bank's total holds, and each
// run's commits per second, abort rate and re-runs are logged.
func TestServerCommitUnderHotAccounts(t *testing.T) {
	for _, o := range serverCommitHotOptions(gpuDevice(t)) {
		res := runHotBank(t, o.opt, o.what)
		t.Logf("%s: %.3g commits/s, %d threads, abort rate %.1f%% (%s), %d re-run by the servers, %d held back",
			o.what, res.Throughput(), res.Threads, 100*res.AbortRate(), res.AbortString(), res.Server.Rerun, res.Server.Deferred)
	}
}
