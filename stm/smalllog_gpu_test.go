package stm

import (
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// smallLogGPUCases are TestSmallLogValidatesInTurnGPU's runs: logs of a
// few entries under every update transaction the clients send (contention
// off), where nearly every request's final check finds that entries it
// must scan left the log. The first is the run of session 20 that passed
// its deadline: its attempts aborted for log full ~10 million times in 8 s
// and it committed ~300 of 1264 transactions (H200, 2026-11-30).
func smallLogGPUCases(dev *gpu.Device) []gpuCase {
	cases := []runCase{
		{"log of 4, 3-round transfers", Config{Versions: 5, LogSize: 4, Servers: 1},
			Bank{Accounts: 195, Initial: 363, ReadOnly: 0.55, ReadSize: 2, Rounds: 3}, 1264, 1},
		{"log of 4, transfers across 2 servers", Config{LogSize: 4, Servers: 2},
			Bank{Accounts: 64, Initial: 10, ReadOnly: 0.3, Rounds: 2}, 2000, 1},
		{"log of 4 listing 2 items, 4-round transfers", Config{LogSize: 4, LogWrites: 2, Servers: 1},
			Bank{Accounts: 128, Initial: 5, ReadOnly: 0.2, Rounds: 4}, 2000, 1},
	}
	out := make([]gpuCase, len(cases))
	for i, c := range cases {
		out[i] = gpuCase{c.name, Options{GPU: dev, Config: c.cfg, Contention: ContentionOff}, c}
	}
	return out
}

// TestSmallLogValidatesInTurnGPU: with a log smaller than a request's
// margin (32 entries) every final check is made in the server's turn,
// before the request's entries are logged, so a check that finds entries
// dropped from the log, or entries that list no items, validates against
// the items' newest writes again (server.cu, stm_revalidate) instead of
// aborting: the runs end, pass the end-to-end checks, and count no abort
// for log full.
func TestSmallLogValidatesInTurnGPU(t *testing.T) {
	for _, x := range smallLogGPUCases(gpuDevice(t)) {
		t.Run(x.name, func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			if n := res.Aborts[LogFull]; n != 0 {
				t.Errorf("%d aborts for log full, want none: every final check was in turn", n)
			}
		})
	}
}
