package stm

import (
	"fmt"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/gputest"
)

// BenchmarkGPUCommitStages runs 2-account transfers (0% read-only, blocks
// of 100; the cases named ro=P% have P% read-only sums of 100 accounts) on
// the GPU for 300 ms per case and reports commits/s with the servers'
// stage counters (RequestStages): the default configuration on 1M and 64K
// accounts, and the geometries the default could take instead (servers,
// client threads, server warps, the workers' table size; 0: the default).
// One run per case (b.N is not used: each case is one timed run).
func BenchmarkGPUCommitStages(b *testing.B) {
	dev := gputest.Device(b)
	for _, c := range []struct {
		accounts, servers, threads, warps, table int
		ro                                       float64
	}{
		{1000000, 0, 0, 0, 0, 0}, {65536, 0, 0, 0, 0, 0},
		{1000000, 0, 0, 16, 0, 0}, {1000000, 0, 0, 16, 128, 0}, {1000000, 0, 0, 24, 0, 0},
		{1000000, 16, 0, 0, 0, 0}, {1000000, 16, 4096, 0, 0, 0}, {1000000, 0, 8192, 0, 0, 0},
		{65536, 0, 0, 16, 0, 0}, {65536, 16, 0, 0, 0, 0},
		{65536, 0, 0, 0, 0, 0.1}, {65536, 0, 9216, 0, 0, 0.1}, {65536, 0, 18432, 0, 0, 0.1},
		{65536, 0, 8192, 0, 0, 0}, {1000000, 0, 0, 0, 0, 0.1},
		{1000000, 0, 0, 0, 0, 0.9}, {1000000, 0, 40960, 0, 0, 0.9}, {65536, 0, 4576, 0, 0, 0.1},
	} {
		name := fmt.Sprintf("accounts=%d/servers=%d/threads=%d/warps=%d/table=%d", c.accounts, c.servers, c.threads, c.warps, c.table)
		if c.ro > 0 {
			name += fmt.Sprintf("/ro=%g%%", 100*c.ro)
		}
		b.Run(name, func(b *testing.B) {
			e, err := Open(Options{GPU: dev, Config: Config{Servers: c.servers}, ClientThreads: c.threads, ServerWarps: c.warps, table: c.table})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			res, err := e.Run(Bank{Accounts: c.accounts, Initial: 100, ReadSize: 100, ReadOnly: c.ro}, RunOptions{Duration: 300 * time.Millisecond, Seed: 1, Timeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if res.Wrong != 0 {
				b.Fatalf("%d read-only totals wrong", res.Wrong)
			}
			b.ReportMetric(res.Throughput(), "commits/s")
			b.ReportMetric(100*res.AbortRate(), "abort%")
			b.Logf("%d servers, %d threads: %.2fM commits/s; %s", res.Servers, res.Threads, res.Throughput()/1e6, res.Server)
		})
	}
}
