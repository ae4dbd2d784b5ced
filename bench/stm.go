package bench

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/bankpeer"
	"github.com/warpkv/warpkv/stm"
)

// Sizes and durations of the stm suite.
const (
	STMBigBank   = 1_000_000 // the large bank and the MemcachedGPU cache (slots)
	STMSmallBank = 6_000     // the small bank
	STMSeed      = 0x57A_5EED
	// One measured run of a case lasts this long on each engine; the row
	// is the median of Options.Reps runs.
	STMRunGPU = 500 * time.Millisecond
	STMRunCPU = 200 * time.Millisecond
)

// STMCase is one measured workload of the stm suite, shared with compat's
// peer benchmark (compat/cmd/stmbench).
type STMCase struct {
	Kind     string  // "bank" or "memcached"
	Accounts int     // bank accounts, or memcached slots
	ReadOnly float64 // bank: read-only share; memcached: GET share
	ReadSize int     // bank: accounts a read-only transaction sums (0: all)
	Rounds   int     // bank: moves of a transfer
	Ways     int     // memcached associativity
	Sharded  bool    // bank: conflict-free
	Zipf     float64 // bank: Zipf exponent of the block a transaction uses (hot accounts; 0: uniform)
	Servers  int     // commit servers (0: 1)
	LogSize  int     // log entries per server (0: the default)
	Versions int     // versions per item (0: the default)
	Threads  int     // GPU: concurrent transactions (0: the engine's default; -1: as many as fit)
	GPUOnly  bool    // a sweep of the GPU engine's options (servers, log size, threads)
}

// Name is the case's operation column, e.g. "bank 1M, 90% ro of 100, 1 round".
func (c STMCase) Name() string {
	var b strings.Builder
	switch c.Kind {
	case "memcached":
		fmt.Fprintf(&b, "memcached %s slots, %d ways, %g%% GET", SI(float64(c.Accounts)), c.Ways, 100*c.ReadOnly)
	default:
		rs := "all"
		if c.ReadSize > 0 {
			rs = fmt.Sprint(c.ReadSize)
		}
		fmt.Fprintf(&b, "bank %s, %g%% ro of %s, %d round", SI(float64(c.Accounts)), 100*c.ReadOnly, rs, max(c.Rounds, 1))
		if c.Rounds > 1 {
			b.WriteString("s")
		}
		if c.Sharded {
			b.WriteString(", sharded")
		}
		if c.Zipf > 0 {
			fmt.Fprintf(&b, ", zipf %g", c.Zipf)
		}
	}
	if c.Servers > 1 {
		fmt.Fprintf(&b, ", %d servers", c.Servers)
	}
	if c.LogSize > 0 {
		fmt.Fprintf(&b, ", log %d", c.LogSize)
	}
	if c.Versions > 0 {
		fmt.Fprintf(&b, ", %d versions", c.Versions)
	}
	switch {
	case c.Threads > 0:
		fmt.Fprintf(&b, ", %s threads", SI(float64(c.Threads)))
	case c.Threads < 0:
		b.WriteString(", all threads that fit")
	}
	return b.String()
}

// Workload returns the case's workload: bank accounts start at 100;
// MemcachedGPU keys follow Zipf 0.99.
func (c STMCase) Workload() stm.Workload {
	if c.Kind == "memcached" {
		return stm.Memcached{Slots: c.Accounts, Ways: c.Ways, Gets: c.ReadOnly, Zipf: 0.99}
	}
	return c.Bank()
}

// Bank returns a bank case's workload.
func (c STMCase) Bank() stm.Bank {
	return stm.Bank{Accounts: c.Accounts, Initial: 100, ReadOnly: c.ReadOnly, ReadSize: c.ReadSize, Rounds: c.Rounds, Sharded: c.Sharded, Zipf: c.Zipf}
}

// Config returns the engine configuration of the case.
func (c STMCase) Config() stm.Config {
	return stm.Config{Servers: c.Servers, LogSize: c.LogSize, Versions: c.Versions}
}

// Options returns the engine options of the case on top of o.
func (c STMCase) Options(o stm.Options) stm.Options {
	o.Config = c.Config()
	switch {
	case c.Threads > 0:
		o.ClientThreads = c.Threads
	case c.Threads < 0:
		o.ClientThreads = 1 << 30 // bounded by occupancy
	}
	return o
}

// STMCases returns the cases with the large bank (and cache) of big items
// (STMBigBank as the issue writes them; smaller values scale the large
// cases down, the small bank stays at most STMSmallBank): Bank with the
// small and the large bank, read-only shares 0/10/50/90/99% of 100
// accounts and of all, transfers of 1 round; the large bank with updates
// of 2 to 64 rounds at 0% and 90% read-only; the small bank at 90%
// read-only of all with rings of 1, 2 and 4 versions; MemcachedGPU with 4 to 256
// ways at 99.8% GET (slots: big rounded up to a multiple of 256); and, for
// the GPU engine, 2 to 8 servers (random and sharded transfers, and 90%
// read-only), log sizes 64 to 4096 on the update-only large bank with 16k
// concurrent transactions, and 512, 2k, 16k and all the concurrent
// transactions that fit at 0% and 90% read-only.
func STMCases(big int) []STMCase {
	small := min(STMSmallBank, big)
	rs := func(n int) int { return min(100, n) }
	var out []STMCase
	sizes := []int{small, big}
	if small == big {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		for _, ro := range []float64{0, 0.1, 0.5, 0.9, 0.99} {
			for _, size := range []int{rs(n), 0} {
				out = append(out, STMCase{Kind: "bank", Accounts: n, ReadOnly: ro, ReadSize: size, Rounds: 1})
			}
		}
	}
	for _, ro := range []float64{0, 0.9} {
		for _, k := range []int{2, 4, 8, 16, 32, 64} {
			out = append(out, STMCase{Kind: "bank", Accounts: big, ReadOnly: ro, ReadSize: rs(big), Rounds: k})
		}
	}
	for _, v := range []int{1, 2, 4} { // ring depth against long read-only transactions
		out = append(out, STMCase{Kind: "bank", Accounts: small, ReadOnly: 0.9, Rounds: 1, Versions: v})
	}
	slots := (big + 255) / 256 * 256 // one capacity for every associativity
	for _, w := range []int{4, 8, 16, 32, 64, 128, 256} {
		out = append(out, STMCase{Kind: "memcached", Accounts: slots, Ways: w, ReadOnly: 0.998})
	}
	for _, s := range []int{2, 4, 8} {
		out = append(out, STMCase{Kind: "bank", Accounts: big, ReadSize: rs(big), Rounds: 1, Servers: s, GPUOnly: true})
		out = append(out, STMCase{Kind: "bank", Accounts: big, ReadSize: rs(big), Rounds: 1, Servers: s, Sharded: true, GPUOnly: true})
		out = append(out, STMCase{Kind: "bank", Accounts: big, ReadOnly: 0.9, ReadSize: rs(big), Rounds: 1, Servers: s, GPUOnly: true})
	}
	out = append(out, STMCase{Kind: "bank", Accounts: big, ReadSize: rs(big), Rounds: 1, Sharded: true, GPUOnly: true})
	for _, l := range []int{64, 256, 1024, 4096} { // at one concurrency, so that the log's size shows in the aborts
		out = append(out, STMCase{Kind: "bank", Accounts: big, ReadSize: rs(big), Rounds: 1, LogSize: l, Threads: 16384, GPUOnly: true})
	}
	for _, ro := range []float64{0, 0.9} {
		for _, th := range []int{512, 2048, 16384, -1} {
			out = append(out, STMCase{Kind: "bank", Accounts: big, ReadOnly: ro, ReadSize: rs(big), Rounds: 1, Threads: th, GPUOnly: true})
		}
	}
	return out
}

// STMRun is one measured run of a case.
type STMRun struct {
	Stats   stm.Stats
	Wrong   uint64
	Elapsed time.Duration
	Commit  stm.Breakdown
	Server  stm.ServerStats
	Threads int
	Servers int  // GPU: commit servers the run used
	Direct  bool // GPU: the run committed without its servers (stm.Options.Commit)
	// Latency: every committed transaction's latency, from its first
	// attempt to its commit (the CSMV engines' Result.Latency; a peer's
	// transactions, each run once, from their draw to their return).
	Latency stm.Latency
}

// LatencyText is the run's transaction latency as the stm tables print
// it, "p50/p99/p99.9", e.g. "12µs/40µs/61µs" ("not timed" without
// latencies).
func (r *STMRun) LatencyText() string {
	if r.Latency.Count() == 0 {
		return "not timed"
	}
	return fmt.Sprintf("%v/%v/%v", r.Latency.P50(), r.Latency.P99(), r.Latency.P999())
}

// Rate is commits per second.
func (r STMRun) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Stats.Total()) / r.Elapsed.Seconds()
}

// Note describes a run's aborts and, when measured, where commit time went.
func (r STMRun) Note(op, engine string) string {
	s := fmt.Sprintf("%s on %s: %d threads, aborts %s, abort rate %.1f%%", op, engine, r.Threads, r.Stats.AbortString(), 100*r.Stats.AbortRate())
	if r.Direct {
		s += "; direct commits"
	}
	if r.Latency.Count() > 0 {
		s += fmt.Sprintf("; commit latency p50/p99/p99.9 %s", r.LatencyText())
	}
	b := r.Commit
	waitName := "wait server"
	if r.Direct {
		waitName = "lock and timestamp" // stm.Breakdown.WaitServer of direct commits
	}
	phases := []struct {
		name string
		d    time.Duration
	}{{"pre-validate", b.PreValidate}, {waitName, b.WaitServer}, {"validate", b.Validate}, {"insert", b.Insert},
		{"write-back", b.WriteBack}, {"publish", b.Publish}}
	var total time.Duration
	for _, p := range phases {
		total += p.d
	}
	if total > 0 && r.Stats.Commits > 0 {
		var parts []string
		for _, p := range phases {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", p.name, 100*float64(p.d)/float64(total)))
		}
		s += fmt.Sprintf("; commit time %v per update commit (%s); execution %v per commit",
			(total / time.Duration(r.Stats.Commits)).Round(time.Nanosecond), strings.Join(parts, ", "),
			(b.Execute / time.Duration(max(r.Stats.Total(), 1))).Round(time.Nanosecond))
	}
	if r.Server.Requests > 0 {
		s += fmt.Sprintf("; %d servers: %s", r.Servers, r.Server)
	}
	if r.Direct {
		s += "; " + r.conflictSites()
	}
	return s
}

// conflictSites says where a direct-commit run found the conflicts behind
// its read-write and write-write aborts: the in-warp check, another lane's
// lock on an item read, a stale attempt run again at once after its warp's
// bodies, and the rest at validation against a newer write; then the
// attempts held back at their locks (not aborts: another lane held an item
// they write), the chained attempts and the warp rounds.
func (r STMRun) conflictSites() string {
	conf := r.Stats.Aborts[stm.ReadWrite] + r.Stats.Aborts[stm.WriteWrite]
	s := r.Server
	found := s.InWarp + s.LockMet + s.Refreshed
	out := fmt.Sprintf("conflicts found: %d by the in-warp check, %d on a held lock, %d stale after the body, %d on a newer write at validation",
		s.InWarp, s.LockMet, s.Refreshed, conf-min(conf, found))
	if s.Deferred > 0 {
		out += fmt.Sprintf("; %d attempts held back at their locks", s.Deferred)
	}
	if c := s.ChainString(); c != "" {
		out += "; " + c
	}
	if s.Rounds > 0 {
		out += fmt.Sprintf("; %d client warp rounds of %v", s.Rounds, (s.RoundTime / time.Duration(s.Rounds)).Round(10*time.Nanosecond))
		if ph := s.Phases.Per(s.Rounds, s.RoundTime); ph != "" && s.Phases.Check > 0 {
			out += " (" + ph + ")"
		}
	}
	return out
}

// RunSTMCase runs a case for d on an open engine; the run fails if a
// read-only total was wrong or the final store's invariants do not hold.
// breakdown measures where commit time goes (on the CPU engine its clock
// reads slow the run down: measure throughput without it); latency times
// every commit (stm.RunOptions.Latency: up to 1% of the GPU engine's
// commits a second).
func RunSTMCase(e *stm.Engine, c STMCase, d time.Duration, breakdown, latency bool) (STMRun, error) {
	res, err := e.Run(c.Workload(), stm.RunOptions{Duration: d, Seed: STMSeed, Breakdown: breakdown, Latency: latency})
	if err != nil {
		return STMRun{}, err
	}
	if res.Wrong != 0 {
		return STMRun{}, fmt.Errorf("%s: %d read-only transactions saw a wrong total", c.Name(), res.Wrong)
	}
	return STMRun{Stats: res.Stats, Wrong: res.Wrong, Elapsed: res.Elapsed, Commit: res.Commit, Server: res.Server, Threads: res.Threads, Servers: res.Servers, Direct: res.Direct, Latency: res.Latency}, nil
}

// MedianSTM returns the run with the median commit rate.
func MedianSTM(runs []STMRun) STMRun {
	s := slices.Clone(runs)
	sort.Slice(s, func(i, j int) bool { return s[i].Rate() < s[j].Rate() })
	return s[len(s)/2]
}

// RunSTM measures the CSMV engines on the stm cases: the CPU engine and,
// when the device option resolves to a GPU, the GPU engine (whose rows
// carry their ratio to the CPU engine). Options.Size is the large bank
// (default STMBigBank).
func RunSTM(o Options) (*Report, error) {
	rep := NewReport("stm", o.reps())
	p := NewProgress(o.Progress)
	big := STMBigBank
	if o.Size > 0 {
		big = o.Size
	}
	if big < 100 {
		return nil, fmt.Errorf("bench stm: size %d: want at least 100 accounts", big)
	}
	c, err := gpu.Choose(o.Device)
	if err != nil {
		return nil, fmt.Errorf("bench stm: %w", err)
	}
	type eng struct {
		name string
		opt  stm.Options
		d    time.Duration
	}
	engines := []eng{{"cpu", stm.Options{Device: "cpu"}, STMRunCPU}}
	rep.Engines = append(rep.Engines, "cpu: the CSMV CPU engine, GOMAXPROCS goroutines")
	if c.Backend == gpu.BackendGPU {
		defer c.Device.Close()
		engines = append(engines, eng{"gpu", stm.Options{GPU: c.Device}, STMRunGPU})
		rep.Engines = append(rep.Engines, "gpu: "+c.Reason)
	} else {
		rep.Engines = append(rep.Engines, c.Reason)
	}
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("each run lasts %v on the CPU engine and %v on the GPU engine, seed %#x; bank accounts start at 100; rows are commits (update and read-only) per second; the notes' commit latencies come from one more run of each engine that times every commit (stm.RunOptions.Latency), the CPU engine's breakdown from the same run (its clock reads slow it down)", STMRunCPU, STMRunGPU, STMSeed),
		"a read-only transaction of the bank sums one block of its read size (all: the whole bank) and transfers stay inside blocks, so every total is checked; memcached: 16-byte keys, 99.8% GET, Zipf 0.99 over twice as many keys as slots")
	for _, cs := range STMCases(big) {
		var cpuRow Result
		for _, en := range engines {
			if cs.GPUOnly && en.name == "cpu" {
				continue
			}
			e, err := stm.Open(cs.Options(en.opt))
			if err != nil {
				rep.Finish()
				return rep, fmt.Errorf("bench stm: %s: %w", cs.Name(), err)
			}
			p.Printf("%s: %s", en.name, cs.Name())
			var runs []STMRun
			var note STMRun
			for i := range o.reps() + 1 {
				// One extra run, whose rate is not reported, times every
				// commit and, on the CPU engine, measures the breakdown
				// (the GPU engine measures it for free in every run).
				extra := i == o.reps()
				r, err := RunSTMCase(e, cs, en.d, extra || en.name != "cpu", extra)
				if err != nil {
					e.Close()
					rep.Finish()
					return rep, fmt.Errorf("bench stm: %s on %s: %w", cs.Name(), en.name, err)
				}
				if extra {
					note = r
				} else {
					runs = append(runs, r)
				}
			}
			e.Close()
			m := MedianSTM(runs)
			if en.name != "cpu" {
				lat := note.Latency
				note = m
				note.Latency = lat
			}
			row := NewResult(cs.Name(), en.name, int64(m.Stats.Total()), 0, m.Elapsed.Seconds())
			if en.name == "cpu" {
				cpuRow = row
			} else if cpuRow.OpsPerSec > 0 {
				row = row.VsPeer("cpu", cpuRow)
			}
			rep.add(row)
			rep.Notes = append(rep.Notes, note.Note(cs.Name(), en.name))
		}
	}
	rep.Finish()
	return rep, nil
}

// BankPeer is a bank implemented outside the STM engines, for comparison
// (internal/bankpeer's Peer). Every method is safe for concurrent use.
type BankPeer = bankpeer.Peer

// RunBankPeer runs bank transactions (the engines' own, from Bank.Draw) on
// a peer with the given number of goroutines for d, and checks every
// read-only total and the final store. Cost: d of wall time.
func RunBankPeer(p BankPeer, b stm.Bank, seed uint64, workers int, d time.Duration) (STMRun, error) {
	r, err := bankpeer.RunFor(p, b, seed, workers, d)
	return STMRun{Stats: r.Stats, Wrong: r.Wrong, Elapsed: r.Elapsed, Threads: r.Workers, Latency: r.Latency}, err
}

// NewGlobalLockBank returns a bank whose every transaction holds one lock.
func NewGlobalLockBank(b stm.Bank) BankPeer { return bankpeer.NewGlobalLock(b) }

// NewItemLockBank returns a bank with a mutex per account taken in order.
func NewItemLockBank(b stm.Bank) BankPeer { return bankpeer.NewItemLock(b) }
