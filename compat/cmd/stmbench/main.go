// Command stmbench measures the bank cases of warpkv's `warpkv bench stm`
// suite (the same transactions, from bench.STMCases and stm.Bank.Draw) on
// warpkv's CSMV CPU engine and its peers, side by side in one run:
// github.com/anacrolix/stm (one stm.Var per account), a mutex per account
// taken in ascending order, and one global lock, each with GOMAXPROCS
// goroutines (or the counts of --goroutines); and, when the device option resolves to a GPU, warpkv's GPU
// engine. Every row carries its ratio to anacrolix/stm on the same case
// and goroutine count; a note per case gives the GPU engine's ratio to the
// CPU engine, and one per case and goroutine count the heap allocations per
// commit of every implementation (runtime.MemStats.Mallocs over the run,
// setup included, over its commits) and the process CPU time per commit
// (getrusage, setup included: on a shared machine a steadier figure than
// commits per second), and one per case the transaction latency
// p50/p99/p99.9 of every implementation (each transaction timed: a peer's
// from its draw to its return, a CSMV engine's from its first attempt to
// its commit, stm.Result.Latency). The timing is on by default, since
// issue 23's rows report the commit latency; --latency=false leaves the
// CSMV engines untimed, for their throughput alone (the GPU engine's
// timing costs up to 1% of its commits a second).
//
// --goroutines runs every case at each of a list of goroutine counts (the
// rows' operation then ends in ", N goroutines"; the GPU engine, which runs
// its own threads, only with the last count); --cases takes substrings of
// case names separated by '|'.
//
// --banks replaces the suite's cases with issue 23's matrix: at each bank
// size, every Zipf exponent of --zipf (the block a transaction uses: 0
// uniform, 0.99 hot accounts), transfer rounds of --rounds and read-only
// share of --ro, with read-only sums of 100 accounts (blocks of 100, which
// transfers stay in); --cases still filters it.
//
//	cd compat && go run ./cmd/stmbench --size 6000 --duration 200ms
//	cd compat && go run ./cmd/stmbench --device gpu --reps 3
//	cd compat && go run ./cmd/stmbench --device cpu --cases '1M, 0% ro of 100, 1 round|1M, 90% ro of 100, 1 round' --goroutines 1,2,4,8,16
//	cd compat && go run ./cmd/stmbench --device gpu --banks 65536 --rounds 1,2 --zipf 0,0.99 --ro 0,0.1,0.5,0.9,0.99
//
// Every implementation checks every read-only total and the final total of
// the bank; a wrong one posts no figure but a FAILED note, and the command
// exits with status 1 after printing the rest.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	astm "github.com/anacrolix/stm"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/compat/internal/peerbench"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/stm"
)

func main() {
	size := flag.Int("size", bench.STMBigBank, "accounts of the large bank")
	reps := flag.Int("reps", 1, "runs behind each median")
	duration := flag.Duration("duration", bench.STMRunCPU, "length of one run of a peer or the CPU engine")
	gpuDuration := flag.Duration("gpu-duration", bench.STMRunGPU, "length of one run of the GPU engine")
	device := flag.String("device", "auto", "warpkv engines: cpu, or auto, gpu, gpu:N to add the GPU engine")
	peers := flag.String("peers", "anacrolix,item-locks,global-lock", "peers to measure, comma-separated (anacrolix, item-locks, global-lock; empty: none)")
	only := flag.String("cases", "", "only cases whose name contains this (several: separated by '|')")
	goroutines := flag.String("goroutines", "", "goroutine counts to run every case at, comma-separated, e.g. 1,2,4,8,16 (default: GOMAXPROCS)")
	banks := flag.String("banks", "", "bank sizes, comma-separated: run the matrix of --zipf, --rounds and --ro on each instead of the suite's cases")
	zipfs := flag.String("zipf", "0,0.99", "with --banks: Zipf exponents of the block a transaction uses, comma-separated (0 uniform, 0.99 hot accounts)")
	rounds := flag.String("rounds", "1,2", "with --banks: rounds of a transfer, comma-separated")
	ros := flag.String("ro", "0,0.1,0.5,0.9,0.99", "with --banks: read-only shares, comma-separated")
	jsonPath := flag.String("json", "", "also write the results as JSON to `FILE`")
	quiet := flag.Bool("quiet", false, "no progress lines on stderr")
	throttle := flag.Float64("throttle", 0, "GPU engine: the abort rate its admission control holds client warps near (stm.Options.Throttle; 0 default, negative off)")
	contention := flag.String("contention", "default", "GPU engine: what client warps do about conflicts before they ask a server: default, off, check or claims (stm.Options.Contention)")
	stripe := flag.Int("stripe", 0, "GPU engine: items of each stripe dealt to the servers in turn (stm.Options.Stripe; 0: contiguous partitions)")
	chain := flag.Int("chain", 0, "GPU engine with direct commits: passes of chained attempts a round, lost update attempts run again in their round (stm.Options.Chain; 0: chosen, stm.DefaultChain passes under a Zipf law for small write sets below stm.ChainAutoReadOnly read-only; negative: off)")
	migrate := flag.Int("migrate", 0, "GPU engine with chained attempts: hold-backs in a row after which a ticket moves to the warp whose lane held its lock, as does at once a lost one whose chained claim met such a lock (stm.Options.Migrate; 0: chosen, stm.DefaultMigrate for workloads that chain by default and write at least stm.MigrateAutoWrites items, else never; negative: never)")
	refresh := flag.Int("refresh", 0, "GPU engine: in-place retries of a stale update attempt per warp round (stm.Options.Refresh; 0: chosen, stm.DefaultRefresh under a Zipf law without chained attempts, else off; negative: off)")
	commit := flag.String("commit", "auto", "GPU engine: how client warps commit update transactions: auto, servers or direct (stm.Options.Commit)")
	serverCommit := flag.String("server-commit", "off", "GPU engine: the servers' share of single-partition commits: off (the clients write back), writeback (the servers write back after the final check) or retry (writeback, and the servers run conflicting update attempts again before their turn) (stm.Options.ServerCommit)")
	latency := flag.Bool("latency", true, "CSMV engines: time every commit (stm.RunOptions.Latency), on by default because issue 23's rows report every implementation's commit latency p50/p99; the timing costs the GPU engine up to 1% of its commits a second (H200, 2026-11-29: 0.8% at 90% read-only of 1M accounts, none measurable at 0%), so --latency=false for throughput alone")
	threads := flag.Int("threads", 0, "GPU engine: client threads of every case (stm.Options.ClientThreads; 0: the case's or the engine's default, -1: as many as fit)")
	versions := flag.Int("versions", 0, "CSMV engines: versions each item keeps, in every case (stm.Config.Versions, 1 to 1024; 0: the case's or the engine's default, stm.DefaultVersions); the case's name says it")
	flag.Parse()
	counts, err := parseCounts(*goroutines)
	mode, cerr := stm.ParseContention(*contention)
	if err == nil {
		err = cerr
	}
	scMode, serr := stm.ParseServerCommit(*serverCommit)
	if err == nil {
		err = serr
	}
	path, perr := stm.ParseCommitPath(*commit)
	if err == nil {
		err = perr
	}
	if err == nil && (*versions < 0 || *versions > 1<<10) {
		err = fmt.Errorf("--versions %d: want 0 (each case's own) to 1024", *versions)
	}
	var cases []bench.STMCase
	if err == nil && *banks != "" {
		cases, err = matrixCases(*banks, *zipfs, *rounds, *ros)
	}
	if flag.NArg() > 0 || *throttle >= 1 || *threads < -1 || *stripe < 0 || *size < 100 || *reps < 1 || *duration <= 0 || *gpuDuration <= 0 || err != nil {
		if err != nil {
			fmt.Fprintln(os.Stderr, "stmbench:", err)
		}
		flag.Usage()
		os.Exit(2)
	}
	cfg := config{size: *size, reps: *reps, d: *duration, gpuD: *gpuDuration, device: *device, throttle: *throttle, contention: mode, stripe: *stripe, refresh: *refresh, chain: *chain, migrate: *migrate, serverCommit: scMode, commit: path, threads: *threads, versions: *versions, latency: *latency, peers: *peers, only: *only, goroutines: counts, cases: cases}
	var progress io.Writer
	if !*quiet {
		progress = os.Stderr
	}
	rep, err := run(cfg, progress)
	if rep != nil {
		header := fmt.Sprintf("median of %d runs; ratio: commits/s relative to the named reference", rep.Reps)
		if perr := peerbench.Print(os.Stdout, rep, header, *jsonPath); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stmbench:", err)
		os.Exit(1)
	}
}

type config struct {
	size, reps   int
	d, gpuD      time.Duration
	device       string
	throttle     float64          // the GPU engine's Options.Throttle
	contention   stm.Contention   // the GPU engine's Options.Contention
	stripe       int              // the GPU engine's Options.Stripe
	refresh      int              // the GPU engine's Options.Refresh
	chain        int              // the GPU engine's Options.Chain
	migrate      int              // the GPU engine's Options.Migrate
	serverCommit stm.ServerCommit // the GPU engine's Options.ServerCommit
	commit       stm.CommitPath   // the GPU engine's Options.Commit
	threads      int              // the GPU engine's client threads (0: the case's; -1: as many as fit)
	versions     int              // both CSMV engines' versions per item (0: the case's)
	latency      bool             // the CSMV engines time every commit (stm.RunOptions.Latency)
	peers, only  string
	goroutines   []int           // goroutine counts (nil: GOMAXPROCS, rows without a count)
	cases        []bench.STMCase // the cases to run (nil: the suite's bank cases at size)
}

// matrixCases returns issue 23's bank matrix: at each size of banks, each
// Zipf exponent, rounds and read-only share (all comma-separated lists),
// read-only sums of 100 accounts.
func matrixCases(banks, zipfs, rounds, ros string) ([]bench.STMCase, error) {
	sizes, err := parseCounts(banks)
	if err != nil {
		return nil, fmt.Errorf("--banks %q: want sizes separated by commas", banks)
	}
	ks, err := parseCounts(rounds)
	if err != nil || len(ks) == 0 {
		return nil, fmt.Errorf("--rounds %q: want positive counts separated by commas", rounds)
	}
	zs, err := parseShares(zipfs, "--zipf", 0.999)
	if err != nil {
		return nil, err
	}
	rs, err := parseShares(ros, "--ro", 1)
	if err != nil {
		return nil, err
	}
	var out []bench.STMCase
	for _, n := range sizes {
		if n < 100 {
			return nil, fmt.Errorf("--banks: %d accounts: want at least 100", n)
		}
		for _, z := range zs {
			for _, k := range ks {
				for _, ro := range rs {
					out = append(out, bench.STMCase{Kind: "bank", Accounts: n, ReadOnly: ro, ReadSize: 100, Rounds: k, Zipf: z})
				}
			}
		}
	}
	return out, nil
}

// parseShares parses a comma-separated list of numbers in [0, most].
func parseShares(s, name string, most float64) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x < 0 || x > most {
			return nil, fmt.Errorf("%s %q: want numbers from 0 to %g separated by commas", name, s, most)
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty", name)
	}
	return out, nil
}

// parseCounts parses --goroutines: positive counts separated by commas;
// "" is none.
func parseCounts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--goroutines %q: want positive counts separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// selected reports whether case name matches only: one of its
// '|'-separated substrings ("" matches every case).
func selected(name, only string) bool {
	if only == "" {
		return true
	}
	for _, sub := range strings.Split(only, "|") {
		if sub != "" && strings.Contains(name, sub) {
			return true
		}
	}
	return false
}

// peer names and constructors.
var peerKinds = map[string]func(stm.Bank) bench.BankPeer{
	"anacrolix":   newAnacrolixBank,
	"item-locks":  bench.NewItemLockBank,
	"global-lock": bench.NewGlobalLockBank,
}

// run measures every bank case of the suite on every implementation.
func run(c config, progress io.Writer) (*bench.Report, error) {
	var names []string
	for _, p := range strings.Split(c.peers, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if peerKinds[p] == nil {
			return nil, fmt.Errorf("unknown peer %q (want anacrolix, item-locks or global-lock)", p)
		}
		names = append(names, p)
	}
	ch, err := gpu.Choose(c.device)
	if err != nil {
		return nil, err
	}
	counts := c.goroutines
	if len(counts) == 0 {
		counts = []int{runtime.GOMAXPROCS(0)}
	}
	rep := bench.NewReport("stm-peers", c.reps)
	defer rep.Finish()
	rep.Engines = append(rep.Engines, fmt.Sprintf("cpu: warpkv's CSMV CPU engine; peers: %s; %s goroutines each (GOMAXPROCS %d)",
		strings.Join(names, ", "), joinInts(counts), runtime.GOMAXPROCS(0)))
	var dev *gpu.Device
	if ch.Backend == gpu.BackendGPU {
		dev = ch.Device
		defer dev.Close()
		rep.Engines = append(rep.Engines, "gpu: "+ch.Reason, fmt.Sprintf("gpu: admission control (throttle) %s", throttleText(c.throttle)),
			fmt.Sprintf("gpu: contention management %s", contentionText(c.contention)), "gpu: items dealt to the servers "+stripeText(c.stripe), "gpu: stale update attempts run again at once "+refreshText(c.refresh), "gpu: chained attempts "+chainText(c.chain), "gpu: held-back tickets migrate "+migrateText(c.migrate),
			"gpu: the servers' share of single-partition commits: "+c.serverCommit.String(),
			"gpu: commit path "+c.commit.String()+" (direct: client warps lock the items they write and commit without the servers; auto: direct below 95% read-only and up to 16 writes a transaction; each row's note says which ran)")
	} else {
		rep.Engines = append(rep.Engines, ch.Reason)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("runs of %v (GPU engine %v), seed %#x, accounts start at 100; the same transactions on every implementation (stm.Bank.Draw)", c.d, c.gpuD, bench.STMSeed))
	p := bench.NewProgress(progress)
	failed := 0
	cases := c.cases
	if cases == nil {
		cases = bench.STMCases(c.size)
	}
	for _, cs := range cases {
		if c.versions > 0 {
			cs.Versions = c.versions
		}
		if cs.Kind != "bank" || cs.GPUOnly || !selected(cs.Name(), c.only) {
			continue
		}
		b := cs.Bank()
		for ci, workers := range counts {
			op := cs.Name()
			if len(c.goroutines) > 0 {
				op = fmt.Sprintf("%s, %d goroutines", op, workers)
			}
			var ref, cpuRow bench.Result
			var allocs, cpus, lats []string
			measure := func(engine string, one func() (bench.STMRun, error)) {
				p.Printf("%s: %s", engine, op)
				var runs []bench.STMRun
				var mallocs uint64
				var cpu time.Duration
				for range c.reps {
					before, cpu0 := heapAllocs(), cpuTime()
					r, err := one()
					mallocs += heapAllocs() - before
					cpu += cpuTime() - cpu0
					if err != nil {
						rep.Notes = append(rep.Notes, fmt.Sprintf("FAILED %s on %s: %v", op, engine, err))
						failed++
						return
					}
					runs = append(runs, r)
				}
				var commits uint64
				for _, r := range runs {
					commits += r.Stats.Total()
				}
				allocs = append(allocs, fmt.Sprintf("%s %.3g", engine, float64(mallocs)/float64(max(commits, 1))))
				cpus = append(cpus, fmt.Sprintf("%s %v", engine, (cpu/time.Duration(max(commits, 1))).Round(time.Nanosecond)))
				m := bench.MedianSTM(runs)
				lats = append(lats, fmt.Sprintf("%s %s", engine, m.LatencyText()))
				row := bench.NewResult(op, engine, int64(m.Stats.Total()), 0, m.Elapsed.Seconds())
				if ref.OpsPerSec > 0 {
					row = row.VsPeer("anacrolix/stm", ref)
				}
				if engine == "anacrolix/stm" {
					ref = row
				}
				if engine == "csmv cpu" {
					cpuRow = row
				}
				if engine == "csmv gpu" && cpuRow.OpsPerSec > 0 {
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s: GPU engine %.1fx the CPU engine", op, row.OpsPerSec/cpuRow.OpsPerSec))
				}
				if m.Stats.TotalAborts() > 0 || m.Commit != (stm.Breakdown{}) {
					rep.Notes = append(rep.Notes, m.Note(op, engine))
				}
				rep.Results = append(rep.Results, row)
			}
			for _, name := range names {
				peer := name
				label := peer
				if peer == "anacrolix" {
					label = "anacrolix/stm"
				}
				measure(label, func() (bench.STMRun, error) {
					return bench.RunBankPeer(peerKinds[peer](b), b, bench.STMSeed, workers, c.d)
				})
			}
			engines := []struct {
				name string
				opt  stm.Options
				d    time.Duration
			}{{"csmv cpu", stm.Options{Device: "cpu", Workers: workers}, c.d}}
			if dev != nil && ci == len(counts)-1 {
				engines = append(engines, struct {
					name string
					opt  stm.Options
					d    time.Duration
				}{"csmv gpu", stm.Options{GPU: dev, Throttle: c.throttle, Contention: c.contention, Stripe: c.stripe, Refresh: c.refresh, Chain: c.chain, Migrate: c.migrate, ServerCommit: c.serverCommit, Commit: c.commit}, c.gpuD})
			}
			for _, en := range engines {
				o := cs.Options(en.opt)
				switch {
				case en.name != "csmv gpu":
				case c.threads > 0:
					o.ClientThreads = c.threads
				case c.threads < 0:
					o.ClientThreads = 1 << 30 // bounded by occupancy, as STMCase.Threads -1
				}
				e, err := stm.Open(o)
				if err != nil {
					return rep, err
				}
				measure(en.name, func() (bench.STMRun, error) { return bench.RunSTMCase(e, cs, en.d, en.name == "csmv gpu", c.latency) })
				e.Close()
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: heap allocations per commit: %s", op, strings.Join(allocs, ", ")),
				fmt.Sprintf("%s: process CPU time per commit: %s", op, strings.Join(cpus, ", ")),
				fmt.Sprintf("%s: %s %s", op, latencyHeading, strings.Join(lats, ", ")))
		}
	}
	if failed > 0 {
		return rep, fmt.Errorf("%d measurements failed (see the FAILED notes)", failed)
	}
	return rep, nil
}

// latencyHeading introduces a case's latency note: what its figures span
// on each implementation.
const latencyHeading = "transaction latency p50/p99/p99.9 (every transaction timed: a peer's from its draw to its return, " +
	"a CSMV engine's commit latency from its first attempt to its commit, retries included; " +
	"csmv gpu: the device's global timer from the warp taking the ticket to its round's publication):"

// heapAllocs returns the heap allocations of the process so far. Cost: a
// runtime.ReadMemStats (stops the world briefly).
func heapAllocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// cpuTime returns the user and system CPU time of the process so far (0
// where getrusage fails).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// anacrolixBank is the bank on github.com/anacrolix/stm: one Var per
// account; a transfer and a sum are each one Atomically.
type anacrolixBank struct{ acc []*astm.Var }

func newAnacrolixBank(b stm.Bank) bench.BankPeer {
	a := &anacrolixBank{acc: make([]*astm.Var, b.Accounts)}
	for i := range a.acc {
		a.acc[i] = astm.NewVar(b.Initial)
	}
	return a
}

func (a *anacrolixBank) Name() string { return "anacrolix/stm" }

func (a *anacrolixBank) Transfer(moves [][2]int) {
	astm.Atomically(func(tx *astm.Tx) interface{} {
		for _, m := range moves {
			from, to := a.acc[m[0]], a.acc[m[1]]
			tx.Set(from, tx.Get(from).(uint64)-1)
			tx.Set(to, tx.Get(to).(uint64)+1)
		}
		return nil
	})
}

func (a *anacrolixBank) Sum(first, count int) uint64 {
	return astm.Atomically(func(tx *astm.Tx) interface{} {
		var s uint64
		for _, v := range a.acc[first : first+count] {
			s += tx.Get(v).(uint64)
		}
		return s
	}).(uint64)
}

func (a *anacrolixBank) Final() []uint64 {
	out := make([]uint64, len(a.acc))
	for i, v := range a.acc {
		out[i] = astm.AtomicGet(v).(uint64)
	}
	return slices.Clip(out)
}

// throttleText says what --throttle asks of the GPU engine.
func throttleText(t float64) string {
	switch {
	case t < 0:
		return "off"
	case t == 0:
		return fmt.Sprintf("default (abort rate %g, %g with direct commits below %g read-only)", stm.DefaultThrottle, stm.DefaultThrottleDirect, stm.ThrottleDirectReadOnly)
	}
	return fmt.Sprintf("abort rate %g", t)
}

// countText describes an option counted in passes or times whose zero
// chooses and whose negative is off (--chain, --migrate, --refresh): set
// formats a positive n, off is a negative one's text, def the default's.
func countText(n int, set, off, def string) string {
	switch {
	case n > 0:
		return fmt.Sprintf(set, n)
	case n < 0:
		return off
	}
	return def
}

// chainText describes --chain (stm.Options.Chain).
func chainText(n int) string {
	return countText(n, "%d passes a round (with direct commits)", "off",
		fmt.Sprintf("by default (%d passes a round with direct commits under a Zipf law, for update transactions of at most %d writes and a read-only share below %g, else none)", stm.DefaultChain, stm.ChainAutoWrites, stm.ChainAutoReadOnly))
}

// migrateText describes --migrate (stm.Options.Migrate).
func migrateText(n int) string {
	return countText(n, "after %d hold-backs in a row (with chained attempts)", "never",
		fmt.Sprintf("by default (after %d hold-backs in a row with chained attempts, for update transactions of at least %d writes, else never)", stm.DefaultMigrate, stm.MigrateAutoWrites))
}

// refreshText describes --refresh (stm.Options.Refresh).
func refreshText(n int) string {
	return countText(n, "up to %d times a round", "never",
		fmt.Sprintf("by default (up to %d times a round under a Zipf law without chained attempts, else never)", stm.DefaultRefresh))
}

// stripeText describes --stripe (stm.Options.Stripe).
func stripeText(n int) string {
	if n > 0 {
		return fmt.Sprintf("in stripes of %d items", n)
	}
	return "in contiguous partitions"
}

// contentionText says what --contention asks of the GPU engine.
func contentionText(c stm.Contention) string {
	if c == stm.ContentionDefault {
		return fmt.Sprintf("default (%s)", stm.DefaultContention)
	}
	return c.String()
}
