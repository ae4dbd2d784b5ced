package stm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/enginetest"
	"github.com/warpkv/warpkv/internal/gputest"
)

// runCase is one workload run checked end to end.
type runCase struct {
	name string
	cfg  Config
	w    Workload
	n    int64
	// gpuTimes: a GPU run of the case makes gpuTimes × n transactions (it
	// runs more threads than the CPU engine); 1 for the cases of large
	// transactions, whose GPU runs without claims took 2.5-7 s for 4n on an
	// H200 (2026-11-29), almost all of it the runs' last conflicts.
	gpuTimes int64
}

// contendedCases are the contended cases and the shapes around
// them, small enough for two CPU cores.
func contendedCases() []runCase {
	return []runCase{
		{"bank, read-only totals of all", Config{}, Bank{Accounts: 64, Initial: 100, ReadOnly: 0.5, Rounds: 2}, 4000, 4},
		{"bank, read-only blocks of 16", Config{}, Bank{Accounts: 256, Initial: 7, ReadOnly: 0.3, ReadSize: 16, Rounds: 3}, 4000, 4},
		{"hot accounts", Config{}, Bank{Accounts: 3, Initial: 1, ReadOnly: 0.2, Rounds: 2}, 3000, 4},
		{"all transactions on one item", Config{}, RMW{Size: 1, Keys: 1, ReadOnly: 0.1}, 3000, 4},
		{"write-only transactions", Config{}, RMW{Size: 8, Keys: 3, WriteOnly: true}, 3000, 4},
		{"transactions larger than the log", Config{LogSize: 2, LogWrites: 4}, Bank{Accounts: 64, Initial: 5, ReadOnly: 0.2, Rounds: 8}, 2000, 1},
		// Multi-round transfers: on the GPU, validated in table loads of a
		// request's accesses and logged from the write sets (more than
		// STM_SPL writes each); 40 rounds take more accesses than one load.
		{"transfers of 4 rounds", Config{}, Bank{Accounts: 512, Initial: 10, ReadOnly: 0.2, ReadSize: 32, Rounds: 4}, 3000, 4},
		{"transfers of 8 rounds, log of 64", Config{LogSize: 64}, Bank{Accounts: 1024, Initial: 10, ReadOnly: 0.1, ReadSize: 64, Rounds: 8}, 3000, 4},
		{"transfers larger than a table load", Config{}, Bank{Accounts: 2048, Initial: 10, ReadOnly: 0.1, ReadSize: 256, Rounds: 40}, 1000, 1},
		{"hot blocks (zipf 0.99), 2 rounds", Config{}, Bank{Accounts: 4096, Initial: 10, ReadOnly: 0.5, ReadSize: 16, Rounds: 2, Zipf: 0.99}, 3000, 4},
		{"ring depth 1", Config{Versions: 1}, Bank{Accounts: 32, Initial: 9, ReadOnly: 0.3, ReadSize: 4}, 3000, 4},
		{"four servers, transfers across partitions", Config{Servers: 4}, Bank{Accounts: 64, Initial: 100, ReadOnly: 0.3, Rounds: 2}, 4000, 4},
		{"four servers, sharded", Config{Servers: 4}, Bank{Accounts: 64, Initial: 3, ReadOnly: 0.3, ReadSize: 8, Sharded: true}, 3000, 4},
		{"zipf read-modify-write", Config{LogSize: 64}, RMW{Size: 128, Keys: 4, ReadOnly: 0.5, Zipf: 0.99}, 3000, 4},
		{"memcached 8 ways", Config{}, Memcached{Slots: 256, Ways: 8, Gets: 0.9, Zipf: 0.99}, 3000, 4},
	}
}

// checkRun checks a run's result: every ticket committed, no wrong
// read-only total, the history serializable in timestamp order and
// equal to the final store, every attempt's reads from one snapshot, an
// order-free workload's final store equal to a serial run's, and the
// commit latencies (checkLatency: the run must ask for them).
func checkRun(t *testing.T, c runCase, res *Result, seed uint64) {
	t.Helper()
	sp, _ := c.w.spec()
	if res.Total() != uint64(c.n) {
		t.Errorf("%d commits, want %d", res.Total(), c.n)
	}
	if res.Wrong != 0 {
		t.Errorf("%d committed read-only transactions saw a wrong total", res.Wrong)
	}
	initial := make([]uint64, c.w.Items())
	for i := range initial {
		initial[i] = c.w.InitialValue(i)
	}
	if err := CheckHistory(initial, res.History, res.Final); err != nil {
		t.Error(err)
	}
	if err := CheckOpacity(initial, res.History); err != nil {
		t.Error(err)
	}
	committedN := 0
	for _, r := range res.History {
		if !r.Aborted {
			committedN++
		}
	}
	if committedN != int(c.n) {
		t.Errorf("history lists %d commits, want %d", committedN, c.n)
	}
	if sp.orderFree && !sp.sharded {
		want, err := serial(c.w, seed, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(want, res.Final); i >= 0 {
			t.Errorf("final item %d = %d, a serial run gives %d", i, res.Final[i], want[i])
		}
	}
	checkLatency(t, res)
	t.Logf("%s: %d commits (%d read-only), aborts %s, %v, latency %s", res.Device, res.Total(), res.ReadOnlyCommits, res.AbortString(), res.Elapsed, &res.Latency)
}

func firstDiff(a, b []uint64) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestContendedCPU runs the contended cases on the CPU engine with more
// goroutines than cores and checks every run end to end.
func TestContendedCPU(t *testing.T) {
	for _, c := range contendedCases() {
		t.Run(c.name, func(t *testing.T) {
			e, err := Open(Options{Device: "cpu", Config: c.cfg, Workers: 8, yield: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			seed := enginetest.Seed()
			t.Logf("seed %d", seed)
			res, err := e.Run(c.w, RunOptions{Transactions: c.n, Seed: seed, History: true, HistoryAborted: true, Latency: true, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			checkRun(t, c, res, seed)
		})
	}
}

// gpuCase is one GPU run of a contended case: its subtest's name and the
// options of its engine.
type gpuCase struct {
	name string
	o    Options
	c    runCase
}

// contendedGPUCases are TestContendedGPU's runs: each contended case on
// its own servers and on 3.
func contendedGPUCases(dev *gpu.Device) []gpuCase {
	var out []gpuCase
	for _, c := range contendedCases() {
		for _, servers := range []int{c.cfg.Servers, 3} {
			cfg := c.cfg
			cfg.Servers = servers
			name := c.name
			if servers == 3 {
				name += ", 3 servers" // fewer with fewer items: at most one per item
			}
			out = append(out, gpuCase{name, Options{GPU: dev, Config: cfg, Commit: CommitServers}, c})
		}
	}
	return out
}

// TestContendedGPU runs the same cases on the GPU engine (skipped without
// a GPU, failed under WARPKV_REQUIRE_GPU=1).
func TestContendedGPU(t *testing.T) {
	dev := gpuDevice(t)
	for _, x := range contendedGPUCases(dev) {
		t.Run(x.name, func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			want := x.o.Config.Servers
			if want == 0 { // chosen from the device
				sp, err := x.c.w.spec()
				if err != nil {
					t.Fatal(err)
				}
				want = defaultServers(dev.Properties().SMs, x.o.Config.withDefaults(), x.c.w.Items(), sp.span)
			}
			if want = min(want, x.c.w.Items()); res.Servers > want || res.Servers < 1 {
				t.Errorf("%d servers used, want 1 to %d", res.Servers, want)
			}
			t.Logf("%d threads, %d servers, %d aborted attempts not recorded", res.Threads, res.Servers, res.HistoryDropped)
		})
	}
}

// stripesGPUCases are TestStripesGPU's runs: contended cases over 3
// servers in stripes of 1 and 5 items.
func stripesGPUCases(dev *gpu.Device) []gpuCase {
	var out []gpuCase
	for _, c := range contendedCases() {
		switch c.name {
		case "bank, read-only blocks of 16", "transfers of 4 rounds", "hot blocks (zipf 0.99), 2 rounds",
			"four servers, transfers across partitions", "memcached 8 ways":
		default:
			continue
		}
		for _, stripe := range []int{1, 5} {
			cfg := c.cfg
			cfg.Servers = 3
			out = append(out, gpuCase{fmt.Sprintf("%s, stripes of %d", c.name, stripe), Options{GPU: dev, Config: cfg, Stripe: stripe}, c})
		}
	}
	return out
}

// TestStripesGPU runs contended cases with items dealt to the servers in
// stripes (Options.Stripe) of 1 and 5 items over 3 servers, so that most
// update transactions cross partitions, and checks every run end to end
// as TestContendedGPU does, and that the run used the stripes.
func TestStripesGPU(t *testing.T) {
	for _, x := range stripesGPUCases(gpuDevice(t)) {
		t.Run(x.name, func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			if res.Stripe != x.o.Stripe || res.Servers != 3 {
				t.Errorf("stripes of %d over %d servers, want %d over 3", res.Stripe, res.Servers, x.o.Stripe)
			}
			t.Logf("%d threads, aborts %s", res.Threads, res.AbortString())
		})
	}
}

// refreshGPUCases are TestRefreshGPU's runs: contended cases with the
// in-place retries off and at 3.
func refreshGPUCases(dev *gpu.Device) []gpuCase {
	var out []gpuCase
	for _, c := range contendedCases() {
		switch c.name {
		case "bank, read-only totals of all", "bank, read-only blocks of 16", "hot accounts", "hot blocks (zipf 0.99), 2 rounds":
		default:
			continue
		}
		for _, refresh := range []int{-1, 3} {
			out = append(out, gpuCase{fmt.Sprintf("%s, refresh %d", c.name, refresh), Options{GPU: dev, Config: c.cfg, Refresh: refresh, Commit: CommitServers}, c})
		}
	}
	return out
}

// TestRefreshGPU runs contended cases with the in-place retries of stale
// update attempts (Options.Refresh) on and off, checks every run end to
// end as TestContendedGPU does, that no attempt was retried in place when
// off, and that some were when on in the runs of more than one warp.
func TestRefreshGPU(t *testing.T) {
	for _, x := range refreshGPUCases(gpuDevice(t)) {
		t.Run(x.name, func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			// With one warp nothing commits between its bodies and its
			// commit, so nothing is stale; with more, these cases always
			// have stale attempts (H200, 2026-11-29: 29,061 of 29,619 aborts
			// with blocks of 16 on 128 threads).
			refresh := x.o.Refresh
			if res.Server.Refreshed > res.TotalAborts() || (refresh < 0 && res.Server.Refreshed != 0) || (refresh > 0 && res.Threads > 32 && res.Server.Refreshed == 0) {
				t.Errorf("refresh %d: %d attempts run again at once, %d aborts", refresh, res.Server.Refreshed, res.TotalAborts())
			}
			t.Logf("%d threads, aborts %s, %d run again at once", res.Threads, res.AbortString(), res.Server.Refreshed)
		})
	}
}

// directGPUCases are TestDirectCommitGPU's runs: every contended case with
// the client warps committing without the servers.
func directGPUCases(dev *gpu.Device) []gpuCase {
	var out []gpuCase
	for _, c := range contendedCases() {
		out = append(out, gpuCase{c.name + ", direct", Options{GPU: dev, Config: c.cfg, Commit: CommitDirect}, c})
	}
	return out
}

// TestDirectCommitGPU runs the contended cases with direct commits
// (Options.Commit CommitDirect) and checks every run end to end as
// TestContendedGPU does, and that no request went to a server.
func TestDirectCommitGPU(t *testing.T) {
	var conflicts, inWarp uint64
	for _, x := range directGPUCases(gpuDevice(t)) {
		t.Run(x.name, func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			if res.Server.Requests != 0 || !res.Direct {
				t.Errorf("%d requests reached the servers, Result.Direct %v: want none, true", res.Server.Requests, res.Direct)
			}
			// Where the conflicts were found: each abort counted once.
			s := res.Server
			conf := res.Aborts[ReadWrite] + res.Aborts[WriteWrite]
			if s.InWarp+s.LockMet+s.Refreshed > conf {
				t.Errorf("%d in-warp, %d lock-met and %d stale aborts: more than the %d read-write and write-write aborts", s.InWarp, s.LockMet, s.Refreshed, conf)
			}
			if s.Rounds == 0 || s.RoundTime <= 0 {
				t.Errorf("%d client warp rounds of %v in all: want some", s.Rounds, s.RoundTime)
			}
			conflicts += conf
			inWarp += s.InWarp
			t.Logf("%d threads, aborts %s (%d by the in-warp check, %d on a held lock, %d stale), %d held back, %d warp rounds of %v",
				res.Threads, res.AbortString(), s.InWarp, s.LockMet, s.Refreshed, res.Server.Deferred, s.Rounds, meanOf(s.RoundTime, s.Rounds))
		})
	}
	// The contended cases put many lanes of a warp on a few items: some
	// of their conflicts are found inside the warp.
	if conflicts >= 1000 && inWarp == 0 {
		t.Errorf("%d conflicts, none found by the in-warp check", conflicts)
	}
}

// TestChainedCommitGPU runs the contended cases with direct commits and
// chained attempts (Options.Chain) and checks every run end to end as
// TestContendedGPU does (each chained attempt is recorded with the
// snapshot it read, just before its timestamp, so the opacity and serial
// replay checks cover it), and that the contended cases chained lost
// attempts and committed some of them.
func TestChainedCommitGPU(t *testing.T) {
	var chained, committed uint64
	for _, x := range directGPUCases(gpuDevice(t)) {
		x.o.Chain = 3 // passes: lanes that did not get their locks in one chain in the next
		t.Run(x.name+", chained", func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			s := res.Server
			if s.ChainCommits > s.Chained {
				t.Errorf("%d chained attempts committed of %d", s.ChainCommits, s.Chained)
			}
			if conf := res.Aborts[ReadWrite] + res.Aborts[WriteWrite]; s.Chained > conf+s.Deferred {
				t.Errorf("%d attempts chained: more than the %d read-write and write-write aborts and %d held back", s.Chained, conf, s.Deferred)
			}
			chained += s.Chained
			committed += s.ChainCommits
			t.Logf("%d threads, aborts %s, %d lost attempts chained, %d of them committed, %d warp rounds of %v",
				res.Threads, res.AbortString(), s.Chained, s.ChainCommits, s.Rounds, meanOf(s.RoundTime, s.Rounds))
		})
	}
	if chained == 0 || committed == 0 {
		t.Errorf("%d lost attempts chained, %d committed: want some of each", chained, committed)
	}
}

// TestMigratedCommitGPU runs the contended cases with chained attempts
// and migration after every hold-back (Options.Migrate 1: a ticket held
// back at another warp's lock moves to that warp's inbox) and checks every
// run end to end as TestContendedGPU does (a run of a count of
// transactions ends only when every ticket, migrated or not, committed or
// gave up), that each migrated ticket had been held back or had lost an
// attempt, and that the contended cases migrated some.
func TestMigratedCommitGPU(t *testing.T) {
	var migrated uint64
	for _, x := range directGPUCases(gpuDevice(t)) {
		x.o.Chain = 3
		x.o.Migrate = 1
		t.Run(x.name+", migrating", func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			s := res.Server
			if conf := res.Aborts[ReadWrite] + res.Aborts[WriteWrite]; s.Migrated > s.Deferred+conf {
				t.Errorf("%d tickets migrated: more than the %d attempts held back and %d read-write and write-write aborts", s.Migrated, s.Deferred, conf)
			}
			migrated += s.Migrated
			t.Logf("%d threads, aborts %s, %d held back, %d migrated, %d chained (%d committed), %d warp rounds of %v",
				res.Threads, res.AbortString(), s.Deferred, s.Migrated, s.Chained, s.ChainCommits, s.Rounds, meanOf(s.RoundTime, s.Rounds))
		})
	}
	if migrated == 0 {
		t.Errorf("no ticket migrated in the contended cases")
	}
}

// contendedRun is the run runContendedGPU makes of case c on an engine
// opened with o (its seed aside): gpuTimes × n transactions, every attempt
// recorded, the commit latencies timed.
func contendedRun(o Options, c runCase) plannedRun {
	return plannedRun{o: o, w: c.w, ro: RunOptions{Transactions: c.gpuTimes * c.n, History: true, HistoryAborted: true, Latency: true, Timeout: time.Minute}}
}

// runContendedGPU runs case c on an engine opened with o (contendedRun)
// and checks the run end to end (checkRun).
func runContendedGPU(t *testing.T, o Options, c runCase) *Result {
	t.Helper()
	r := contendedRun(o, c)
	r.ro.Seed = enginetest.Seed()
	t.Logf("seed %d", r.ro.Seed)
	res, err := r.run()
	if err != nil {
		t.Fatal(err)
	}
	c.n = r.ro.Transactions
	checkRun(t, c, res, r.ro.Seed)
	return res
}

// contentionModesGPUCases are TestContentionModesGPU's runs: the
// contended cases with each contention mode but the default, on the
// device's default servers.
func contentionModesGPUCases(dev *gpu.Device) []gpuCase {
	var out []gpuCase
	for _, c := range contendedCases() {
		for _, mode := range []Contention{ContentionOff, ContentionCheck, ContentionClaims} {
			if mode != DefaultContention {
				out = append(out, gpuCase{c.name + ", " + mode.String(), Options{GPU: dev, Config: c.cfg, Contention: mode}, c})
			}
		}
	}
	return out
}

// TestContentionModesGPU runs the contended cases on the GPU engine with
// each contention mode (Options.Contention) but the default, which
// TestContendedGPU runs, on the device's default servers, and checks every
// run end to end as TestContendedGPU does.
func TestContentionModesGPU(t *testing.T) {
	for _, x := range contentionModesGPUCases(gpuDevice(t)) {
		t.Run(x.name, func(t *testing.T) {
			res := runContendedGPU(t, x.o, x.c)
			if x.o.Contention != ContentionClaims && res.Server.Deferred != 0 {
				t.Errorf("%d attempts held back without claims", res.Server.Deferred)
			}
			t.Logf("%d threads, %d servers, %d attempts held back by claims", res.Threads, res.Servers, res.Server.Deferred)
		})
	}
}

// runBatch is one run of the differential test: an order-free workload
// run for a number of transactions.
type runBatch struct {
	w    Workload
	cfg  Config
	n    int64
	seed uint64
}

// runOut is what the model and the engines must agree on.
type runOut struct {
	Commits uint64
	Wrong   uint64
	Final   []uint64
}

// serialModel runs batches one transaction after another.
type serialModel struct{}

func (serialModel) Apply(b runBatch) (runOut, error) {
	f, err := serial(b.w, b.seed, b.n)
	return runOut{Commits: uint64(b.n), Final: f}, err
}
func (serialModel) Check() error { return nil }
func (serialModel) Close() error { return nil }

// engineSubject runs batches on an Engine and checks each run's history.
type engineSubject struct {
	t   testing.TB
	opt Options
}

func (s *engineSubject) Apply(b runBatch) (runOut, error) {
	o := s.opt
	o.Config = b.cfg
	e, err := Open(o)
	if err != nil {
		return runOut{}, err
	}
	defer e.Close()
	res, err := e.Run(b.w, RunOptions{Transactions: b.n, Seed: b.seed, History: true, HistoryAborted: true, Timeout: time.Minute})
	if err != nil {
		return runOut{}, err
	}
	initial := make([]uint64, b.w.Items())
	for i := range initial {
		initial[i] = b.w.InitialValue(i)
	}
	if err := CheckHistory(initial, res.History, res.Final); err != nil {
		s.t.Errorf("%s: %v", b.w.Name(), err)
	}
	if err := CheckOpacity(initial, res.History); err != nil {
		s.t.Errorf("%s: %v", b.w.Name(), err)
	}
	return runOut{Commits: res.Total(), Wrong: res.Wrong, Final: res.Final}, nil
}
func (s *engineSubject) Check() error { return nil }
func (s *engineSubject) Close() error { return nil }

// agreeLogSizes are the log sizes of TestEnginesAgreeWithSerialRuns' runs.
var agreeLogSizes = []int{4, 64, 4096}

// agreeGPUOptions are TestEnginesAgreeWithSerialRuns' GPU engines on dev.
func agreeGPUOptions(dev *gpu.Device) []namedOptions {
	return []namedOptions{
		{"gpu", Options{GPU: dev}},
		{"gpu, servers", Options{GPU: dev, Commit: CommitServers}},
		{"gpu, direct", Options{GPU: dev, Commit: CommitDirect}},
		{"gpu, refresh 3", Options{GPU: dev, Refresh: 3, Commit: CommitServers}},
		{"gpu, contention off", Options{GPU: dev, Contention: ContentionOff}},
	}
}

// agreeRuns are runs of every program TestEnginesAgreeWithSerialRuns'
// random runs take: each GPU engine with each log size, on each body (a
// program does not depend on the body's parameters).
func agreeRuns(dev *gpu.Device) []plannedRun {
	var out []plannedRun
	for _, x := range agreeGPUOptions(dev) {
		for _, logSize := range agreeLogSizes {
			for _, w := range []Workload{Bank{Accounts: 100, Initial: 1, ReadSize: 8, Rounds: 2}, RMW{Size: 50, Keys: 3}} {
				o := x.opt
				o.Config = Config{LogSize: logSize}
				out = append(out, plannedRun{o, w, RunOptions{Transactions: 100, History: true, HistoryAborted: true, Timeout: time.Minute}})
			}
		}
	}
	return out
}

// TestEnginesAgreeWithSerialRuns: random order-free runs (bank transfers,
// increments) on the CPU and GPU engines end in the store a serial run of
// the same transactions gives.
func TestEnginesAgreeWithSerialRuns(t *testing.T) {
	if dev, err := gputest.Open(); err == nil {
		compileAhead(t, dev)
	}
	gen := func(r *rand.Rand, _ int, _ serialModel) runBatch {
		cfg := Config{Versions: 1 + r.IntN(8), LogSize: agreeLogSizes[r.IntN(len(agreeLogSizes))], Servers: 1 + r.IntN(4)}
		var w Workload
		if r.IntN(2) == 0 {
			n := 8 + r.IntN(200)
			w = Bank{Accounts: n, Initial: r.Uint64N(1000), ReadOnly: r.Float64() * 0.9, ReadSize: []int{0, 2, 8}[r.IntN(3)], Rounds: 1 + r.IntN(4)}
		} else {
			w = RMW{Size: 1 + r.IntN(100), Keys: 1 + r.IntN(6), ReadOnly: r.Float64() * 0.5, Start: r.Uint64()}
		}
		if cfg.Servers > w.Items() {
			cfg.Servers = 1
		}
		return runBatch{w: w, cfg: cfg, n: int64(100 + r.IntN(1500)), seed: r.Uint64()}
	}
	targets := []enginetest.Target[runBatch, runOut]{
		{Name: "cpu", Open: func(tb testing.TB, _ *gpu.Device) (enginetest.Subject[runBatch, runOut], error) {
			return &engineSubject{t: tb, opt: Options{Device: "cpu", Workers: 6, yield: true}}, nil
		}},
	}
	for _, x := range agreeGPUOptions(nil) {
		targets = append(targets, enginetest.Target[runBatch, runOut]{Name: x.what, GPU: true, Open: func(tb testing.TB, d *gpu.Device) (enginetest.Subject[runBatch, runOut], error) {
			o := x.opt
			o.GPU = d
			return &engineSubject{t: tb, opt: o}, nil
		}})
	}
	enginetest.Run(t, enginetest.Suite[runBatch, runOut, serialModel]{
		NewModel: func() serialModel { return serialModel{} },
		Targets:  targets,
		Compare: func(want, got runOut) string {
			if want.Commits != got.Commits || got.Wrong != 0 {
				return "commits or wrong totals differ"
			}
			if i := firstDiff(want.Final, got.Final); i >= 0 {
				return "final stores differ"
			}
			return ""
		},
	}, enginetest.Case[runBatch, serialModel]{Name: "random order-free runs", Batches: 12, Gen: gen})
}

func TestHistoryFormat(t *testing.T) {
	h := []Record{
		{TS: 3, Snapshot: 2, ReadOnly: true, Reads: []Access{{1, 5}}},
		{TS: 3, Snapshot: 1, Reads: []Access{{0, 10}, {1, 2}}, Writes: []Access{{0, 9}, {1, 3}}},
		{TS: 1, Snapshot: 0, Writes: []Access{{2, 18446744073709551615}}},
		{TS: 0, Aborted: true, Reads: []Access{{0, 1}}},
	}
	var b strings.Builder
	if err := WriteHistory(&b, h); err != nil {
		t.Fatal(err)
	}
	want := `{"ts": 1, "reads": [], "writes": [[2, 18446744073709551615]]}
{"ts": 3, "reads": [[0, 10], [1, 2]], "writes": [[0, 9], [1, 3]]}
{"ts": 3, "ro": true, "reads": [[1, 5]]}
`
	if b.String() != want {
		t.Fatalf("history\n%s\nwant\n%s", b.String(), want)
	}
}

func TestCheckHistoryCatchesViolations(t *testing.T) {
	initial := []uint64{10, 20}
	good := []Record{
		{TS: 1, Reads: []Access{{0, 10}}, Writes: []Access{{0, 11}}},
		{TS: 1, ReadOnly: true, Snapshot: 1, Reads: []Access{{0, 11}, {1, 20}}},
		{TS: 2, Snapshot: 1, Reads: []Access{{0, 11}}, Writes: []Access{{1, 21}}},
	}
	if err := CheckHistory(initial, good, []uint64{11, 21}); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string][]Record{
		"stale read":       {good[0], {TS: 2, Reads: []Access{{0, 10}}, Writes: []Access{{1, 1}}}},
		"shared timestamp": {good[0], {TS: 1, Writes: []Access{{1, 1}}}},
		"read-only skew":   {good[0], {TS: 0, ReadOnly: true, Reads: []Access{{0, 11}}}},
	} {
		if err := CheckHistory(initial, h, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := CheckHistory(initial, good, []uint64{11, 20}); err == nil {
		t.Error("wrong final store accepted")
	}
	// Any order of the records is replayed in timestamp order, the update
	// before the read-only transaction of its timestamp, and checked for
	// opacity the same.
	for _, order := range [][]int{{2, 1, 0}, {1, 0, 2}, {1, 2, 0}} {
		h := []Record{good[order[0]], good[order[1]], good[order[2]]}
		if err := CheckHistory(initial, h, []uint64{11, 21}); err != nil {
			t.Errorf("records in order %v: %v", order, err)
		}
		if err := CheckOpacity(initial, h); err != nil {
			t.Errorf("records in order %v: opacity: %v", order, err)
		}
		var b strings.Builder
		if err := WriteHistory(&b, h); err != nil || !strings.HasPrefix(b.String(), `{"ts": 1, "reads": [[0, 10]]`) {
			t.Errorf("records in order %v: history written as\n%s(%v)", order, b.String(), err)
		}
	}
	aborted := append(slices.Clone(good), Record{Aborted: true, Snapshot: 1, Reads: []Access{{0, 10}}})
	if err := CheckOpacity(initial, aborted); err == nil {
		t.Error("an aborted attempt that read two snapshots passed the opacity check")
	}
}

// TestBankDrawMatchesTheBody: Draw describes exactly the transaction the
// engines run for a ticket.
func TestBankDrawMatchesTheBody(t *testing.T) {
	for _, b := range []Bank{
		{Accounts: 100, Initial: 5, ReadOnly: 0.5, Rounds: 3},
		{Accounts: 103, Initial: 5, ReadOnly: 0.2, ReadSize: 10, Rounds: 2, Sharded: true},
		{Accounts: 1000, Initial: 5, ReadOnly: 0.1, ReadSize: 10, Rounds: 2, Zipf: 0.99},
	} {
		sp, err := b.spec()
		if err != nil {
			t.Fatal(err)
		}
		s := newTestStore(t, StoreOptions{Items: b.Accounts, Init: b.InitialValue, Record: true})
		var d BankTx
		for ticket := uint64(0); ticket < 200; ticket++ {
			thread := int(ticket % 7)
			ro := sp.readOnly(9, ticket, thread, 7)
			fn := func(tx *Tx) error { sp.body(tx, 9, ticket, thread, 7); return nil }
			if ro {
				s.ReadOnly(fn)
			} else {
				s.Atomically(fn)
			}
			h := s.History()
			last := h[len(h)-1]
			b.Draw(9, ticket, thread, &d)
			if d.ReadOnly != ro || d.ReadOnly != last.ReadOnly {
				t.Fatalf("ticket %d: read-only %v, body %v", ticket, d.ReadOnly, ro)
			}
			if d.ReadOnly {
				if len(last.Reads) != d.Count || int(last.Reads[0].Item) != d.First {
					t.Fatalf("ticket %d: sum of %d from %d, body read %d from %d", ticket, d.Count, d.First, len(last.Reads), last.Reads[0].Item)
				}
				continue
			}
			var want []uint32
			for _, m := range d.Moves {
				want = append(want, uint32(m[0]), uint32(m[1]))
			}
			var got []uint32
			seen := map[uint32]bool{}
			for _, m := range want {
				if !seen[m] {
					seen[m] = true
					got = append(got, m)
				}
			}
			var wrote []uint32
			for _, w := range last.Writes {
				wrote = append(wrote, w.Item)
			}
			if !slices.Equal(got, wrote) {
				t.Fatalf("ticket %d: moves %v, body wrote %v", ticket, d.Moves, wrote)
			}
		}
	}
}
