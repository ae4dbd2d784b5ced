package stm

import (
	"fmt"
	"testing"
	"time"
)

// TestThrottleUnderHotAccounts runs transfers on hot accounts (Zipf 0.99,
// no read-only transactions: most attempts abort at full concurrency) with
// admission control off and at abort rate 0.5: off closes no control
// window, on admits fewer threads than the run has (contention management
// off, so that the abort rate is the one admission control sees without it); both conserve the bank's total and see no wrong read-only total.
// It logs both runs' commits per second and abort rates.
func TestThrottleUnderHotAccounts(t *testing.T) {
	dev := gpuDevice(t)
	for _, th := range []float64{-1, 0.5} {
		res := runHotBank(t, Options{GPU: dev, Throttle: th, Contention: ContentionOff}, fmt.Sprintf("throttle %g", th))
		switch {
		case th < 0 && res.Server.Admitted != 0:
			t.Errorf("throttle off: %d threads admitted on average, want no control window", res.Server.Admitted)
		case th > 0 && (res.Server.Admitted < 1 || res.Server.Admitted >= res.Threads):
			t.Errorf("throttle %g: %d of %d threads admitted on average, want 1 to fewer than all", th, res.Server.Admitted, res.Threads)
		}
		t.Logf("throttle %g: %.3g commits/s, %d of %d threads admitted on average, abort rate %.1f%% (%s)",
			th, res.Throughput(), res.Server.Admitted, res.Threads, 100*res.AbortRate(), res.AbortString())
	}
}

// TestContentionUnderHotAccounts runs the same transfers on hot accounts
// with each contention mode (Options.Contention; admission control off):
// every mode conserves the bank's total, only claims hold attempts back,
// and claims do. It logs each run's commits per second, abort rate and
// attempts held back.
func TestContentionUnderHotAccounts(t *testing.T) {
	dev := gpuDevice(t)
	for _, mode := range []Contention{ContentionOff, ContentionCheck, ContentionClaims} {
		res := runHotBank(t, Options{GPU: dev, Throttle: -1, Contention: mode}, mode.String())
		if held := res.Server.Deferred > 0; held != (mode == ContentionClaims) {
			t.Errorf("%s: %d attempts held back by claims", mode, res.Server.Deferred)
		}
		t.Logf("%s: %.3g commits/s, %d threads, abort rate %.1f%% (%s), %d attempts held back",
			mode, res.Throughput(), res.Threads, 100*res.AbortRate(), res.AbortString(), res.Server.Deferred)
	}
}

// namedOptions are an engine's options and the name its runs go by.
type namedOptions struct {
	what string
	opt  Options
}

// hotAccounts and hotInitial are runHotBank's bank: its accounts and
// their initial balance.
const hotAccounts, hotInitial = 65536, 100

// hotBankRun is the run runHotBank makes on an engine opened with o.
func hotBankRun(o Options) plannedRun {
	return plannedRun{o: o, w: Bank{Accounts: hotAccounts, Initial: hotInitial, ReadSize: 100, Zipf: 0.99},
		ro: RunOptions{Duration: 200 * time.Millisecond, Seed: 11, Timeout: time.Minute}}
}

// runHotBank runs 1-round transfers on 64K hot accounts (Zipf 0.99 over
// blocks of 100, no read-only share) for 200 ms on an engine opened with
// o (hotBankRun), and checks that the bank's total holds and no read-only
// total was wrong (what names the run in errors).
func runHotBank(t *testing.T, o Options, what string) *Result {
	t.Helper()
	const accounts, initial = hotAccounts, hotInitial
	res, err := hotBankRun(o).run()
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, v := range res.Final {
		sum += v
	}
	if sum != accounts*initial || res.Wrong != 0 {
		t.Errorf("%s: total %d, want %d; %d wrong read-only totals", what, sum, accounts*initial, res.Wrong)
	}
	return res
}
