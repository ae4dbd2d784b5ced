package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/stm"
)

// Defaults of "warpkv stm bank".
const (
	stmDefaultAccounts     = 1024
	stmDefaultInitial      = 100
	stmDefaultTransactions = 100_000
	stmDefaultReadOnly     = 10.0 // percent
)

// Bounds of stm bank's flags (stm.Config's).
const (
	stmMaxVersions = 1 << 10
	stmMaxLogSize  = 1 << 24
	stmMaxRounds   = 1 << 16 // stm.Bank.Validate's bound
)

// stmFits checks that a store of the given shape fits in memory before
// anything is allocated: on the CPU engine (stm.NewStore) the store itself,
// 24 bytes an account and its version logs (stm.StoreBytes; the CPU
// engine keeps no commit log, so --servers and --log-size cost nothing
// there); on the GPU engine the versions' values and timestamps take
// 16*versions bytes an account of device memory (stm/gpu_layout.go: vals,
// vers); on either engine the final balances read back take 8 bytes an
// account.
func stmFits(accounts, versions int, device string) error {
	if onCPU(device) {
		k := cmp.Or(versions, stm.DefaultCPUVersions)
		store := stm.StoreBytes(accounts, stm.Config{Versions: versions})
		return fits("--accounts", accounts, add(store, mul(uint64(accounts), 8)),
			fmt.Sprintf("the CPU engine's 24 bytes an account and its version logs at %d versions, and 8 bytes an account for the final balances", k))
	}
	k := uint64(cmp.Or(versions, stm.DefaultVersions))
	if err := fitsGPU("--accounts", accounts, mul(uint64(accounts), 16*k),
		fmt.Sprintf("the GPU engine's %d bytes an account at %d versions", 16*k, k), device); err != nil {
		return err
	}
	return fits("--accounts", accounts, mul(uint64(accounts), 8), "8 bytes an account for the final balances")
}

// stmThrottleHelp and stmThrottleWant describe --throttle of stm bank and
// stm run (stm.Options.Throttle), stmChainHelp their --chain
// (stm.Options.Chain), stmMigrateHelp their --migrate (stm.Options.Migrate).
const (
	stmThrottleHelp   = "GPU engine: the abort rate its admission control holds client warps near (0: the engine's default, negative: no admission control)"
	stmThrottleWant   = "want an abort rate under 1 (0: the engine's default, negative: off)"
	stmContentionHelp = "GPU engine: how client warps treat conflicts before they ask a commit server: off, check (drop attempts whose items were written after their snapshot), claims (check, and hold back attempts whose written items another holds) or default (the engine's, claims)"
	stmDirectHelp     = "GPU engine: the same as --commit direct"
	stmChainHelp      = "GPU engine with direct commits: passes of chained attempts a round, in which an update attempt that lost runs again in its round with its items locked (0: the engine's default, 3 under a Zipf law for transactions of at most 4 writes that read no more than they write, below 70% read-only, else none; negative: none)"
	stmMigrateHelp    = "GPU engine with chained attempts: hold-backs in a row after which an update transaction held back at a lock another warp's lane holds moves to that warp, as does one whose lost attempt's chained claim met such a lock (0: the engine's default, after 2 for workloads that chain by default and write at least 3 items, else never; negative: never)"
	stmCommitHelp     = "GPU engine: how client warps commit update transactions: direct (each locks the items it writes and commits without a server: TL2 over CSMV's versions), servers (CSMV's commit servers validate, order and log them) or auto (direct, unless the workload is at least 95% read-only, a transaction may write more than 16 items, or --servers, --log-size or --contention is set)"
)

// runSTM is "warpkv stm bank": the Bank workload on the CSMV engine.
func runSTM(e *env, args []string) error {
	const synopsis = "warpkv stm bank [--device auto|cpu|gpu|gpu:N] [--accounts N] [--initial V] [--transactions N | --duration D] " +
		"[--read-only PCT] [--read-size N] [--rounds K] [--servers N] [--log-size N] [--versions K] [--throttle R] [--chain N] [--migrate N] [--contention MODE] [--commit PATH] " +
		"[--seed S] [--history FILE] [--latency] [--quiet]"
	if len(args) > 0 && args[0] == "run" {
		return runSTMBody(e, args[1:])
	}
	if len(args) > 0 && isHelpFlag(args[0]) {
		args = []string{"bank", "-h"} // "warpkv stm -h": bank's usage
	}
	if len(args) == 0 || args[0] != "bank" {
		return usagef("usage: %s\n       %s", synopsis, stmRunSynopsis)
	}
	fs := newFlagSet(e, "stm bank", synopsis)
	device := fs.String("device", "", "engine: auto, cpu, gpu or gpu:N (default: $"+gpu.EnvDevice+", else auto)")
	accounts := fs.Int("accounts", stmDefaultAccounts, "number of accounts")
	initial := fs.Uint64("initial", stmDefaultInitial, "every account's initial balance")
	transactions := fs.Int64("transactions", stmDefaultTransactions, "transactions to commit (not with --duration)")
	duration := fs.Duration("duration", 0, "run for this long instead of a number of transactions")
	readOnly := fs.Float64("read-only", stmDefaultReadOnly, "percentage of read-only transactions, 0 to 100")
	readSize := fs.String("read-size", "all", "accounts a read-only transaction sums: N consecutive accounts (a block; transfers stay inside blocks), or all")
	rounds := fs.Int("rounds", 1, "rounds of a transfer: each moves 1 from one account to another")
	servers := fs.Int("servers", 0, "commit servers, accounts partitioned over them (0: the engine's default: one per 8 SMs of the GPU, at most one per LogSize/8 accounts, partitions 8 times the --read-size block or more, so 1 for --read-size all; the CPU engine has none)")
	seed := fs.Uint64("seed", 1, "seed of the transactions")
	history := fs.String("history", "", "write every committed transaction as a JSON line to `FILE`")
	logSize := fs.Int("log-size", 0, "commits each server's log keeps (0: the engine's default)")
	versions := fs.Int("versions", 0, "versions each account keeps (0: the engine's default)")
	throttle := fs.Float64("throttle", 0, stmThrottleHelp)
	chain := fs.Int("chain", 0, stmChainHelp)
	migrate := fs.Int("migrate", 0, stmMigrateHelp)
	contention := fs.String("contention", "default", stmContentionHelp)
	commit := fs.String("commit", "auto", stmCommitHelp)
	direct := fs.Bool("direct", false, stmDirectHelp)
	quiet := fs.Bool("quiet", false, "no engine line on stderr")
	latency := fs.Bool("latency", false, stmLatencyHelp)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("stm bank takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["transactions"] && set["duration"]:
		return usagef("--transactions and --duration exclude each other")
	case *accounts < 1:
		return usagef("--accounts %d: want at least 1", *accounts)
	case *accounts > stm.MaxItems:
		return usagef("--accounts %d: want at most %d", *accounts, stm.MaxItems)
	case set["duration"] && *duration <= 0:
		return usagef("--duration %v: want a positive duration", *duration)
	case !set["duration"] && *transactions < 1:
		return usagef("--transactions %d: want at least 1", *transactions)
	case *readOnly < 0 || *readOnly > 100 || *readOnly != *readOnly:
		return usagef("--read-only %g: want a percentage from 0 to 100", *readOnly)
	case *rounds < 1 || *rounds > stmMaxRounds:
		return usagef("--rounds %d: want 1 to %d", *rounds, stmMaxRounds)
	case *servers < 0 || *servers > stm.MaxServers:
		return usagef("--servers %d: want 0 (the engine's default) to %d", *servers, stm.MaxServers)
	case *logSize < 0 || *logSize > stmMaxLogSize:
		return usagef("--log-size %d: want 0 (the engine's default, %d) to %d", *logSize, stm.DefaultLogSize, stmMaxLogSize)
	case *versions < 0 || *versions > stmMaxVersions:
		return usagef("--versions %d: want 0 (the engine's default, %d) to %d", *versions, stm.DefaultVersions, stmMaxVersions)
	case *throttle >= 1 || *throttle != *throttle:
		return usagef("--throttle %g: %s", *throttle, stmThrottleWant)
	case *chain > stm.MaxChain:
		return usagef("--chain %d: want at most %d passes (0: the engine's default, negative: none)", *chain, stm.MaxChain)
	}
	cont, err := stm.ParseContention(*contention)
	if err != nil {
		return usagef("--contention %q: want default, off, check or claims", *contention)
	}
	path, err := stmCommitPath(*commit, *direct)
	if err != nil {
		return err
	}
	size, err := stmBankBlock(*readSize, *accounts, *readOnly)
	if err != nil {
		return err
	}
	if err := checkDevice("--device", *device); err != nil {
		return err
	}
	if err := stmFits(*accounts, *versions, *device); err != nil {
		return err
	}
	if set["history"] && !set["duration"] {
		if err := fits("--transactions", *transactions, mul(uint64(*transactions), uint64(unsafe.Sizeof(stm.Record{}))),
			"a history record each with --history"); err != nil {
			return err
		}
	}
	bank := stm.Bank{Accounts: *accounts, Initial: *initial, ReadOnly: *readOnly / 100, ReadSize: size, Rounds: *rounds}
	if err := bank.Validate(); err != nil {
		return usagef("%v", err)
	}
	// The history is written after the run (README: output files are
	// checked first, and the check leaves no file behind): an engine that
	// cannot be opened, or a run that returns nothing, leaves a file that
	// was there as it was.
	if err := checkOutput("stm bank", "--history", *history); err != nil {
		return err
	}
	eng, err := stm.Open(stm.Options{Device: *device, Throttle: *throttle, Chain: *chain, Migrate: *migrate, Contention: cont, Commit: path, Config: stm.Config{Servers: *servers, LogSize: *logSize, Versions: *versions}})
	if err != nil {
		return err
	}
	defer eng.Close()
	if !*quiet {
		fmt.Fprintln(e.stderr, eng.Reason())
	}
	ro := stm.RunOptions{Seed: *seed, History: *history != "", Latency: *latency}
	if set["duration"] {
		ro.Duration = *duration
	} else {
		ro.Transactions = *transactions
	}
	res, runErr := eng.Run(bank, ro)
	if res == nil {
		return runErr
	}
	if res.Servers < *servers && !*quiet && eng.Backend() == gpu.BackendGPU { // the CPU engine has no servers
		fmt.Fprintf(e.stderr, "stm bank: --servers %d for %d accounts: %d servers (at most one per account, none without accounts)\n", *servers, *accounts, res.Servers)
	}
	if res.HistoryLimited {
		fmt.Fprintf(e.stderr, "stm bank: the run ended after %d commits, before --duration %v: the GPU's history buffer holds no more\n", res.Total(), *duration)
	}
	return reportBank(e, res, runErr, *history, *accounts, *initial, *latency)
}

// stmBankBlock parses stm bank's --read-size (N accounts or all) for a
// store of accounts and a read-only percentage: the block's size, 0 for
// the whole store, or a usage error naming the flag; transfers need blocks
// of at least 2 accounts unless every transaction is read-only.
func stmBankBlock(readSize string, accounts int, readOnly float64) (int, error) {
	size := 0
	if rs := strings.TrimSpace(readSize); rs != "all" {
		n, err := strconv.Atoi(rs)
		switch {
		case err != nil:
			return 0, usagef("--read-size %q: want a number of accounts or all", readSize)
		case n < 1:
			return 0, usagef("--read-size %d: want at least 1 account, or all", n)
		case n > accounts:
			return 0, usagef("--read-size %d is larger than the store of %d accounts (--accounts)", n, accounts)
		}
		if n < accounts {
			size = n
		}
	}
	// A transfer moves between two accounts of one block (stm.Bank): name
	// the flags when a block is smaller, unless every transaction is
	// read-only (--read-only 100, or a share that rounds to 100% in parts
	// per million, as the workload draws it).
	if block := cmp.Or(size, accounts); block < 2 && uint64(readOnly/100*1e6+0.5) < 1e6 {
		if size == 0 {
			return 0, usagef("--accounts %d: transfers need at least 2 accounts (or --read-only 100)", accounts)
		}
		return 0, usagef("--read-size %d: transfers stay inside a block and need blocks of at least 2 accounts (or --read-only 100)", size)
	}
	return size, nil
}

// stmCommitPath parses --commit, with --direct (the flag of 2026-11-30's
// first direct commits) as another way to say --commit direct.
func stmCommitPath(commit string, direct bool) (stm.CommitPath, error) {
	path, err := stm.ParseCommitPath(commit)
	switch {
	case err != nil:
		return 0, usagef("--commit %q: want auto, servers or direct", commit)
	case direct && path == stm.CommitServers:
		return 0, usagef("--direct and --commit servers exclude each other")
	case direct:
		return stm.CommitDirect, nil
	}
	return path, nil
}

// stmCommitText says how a run committed, for its report: "N servers", or
// "direct commits" (the GPU engine without its servers).
func stmCommitText(res *stm.Result) string {
	if res.Direct {
		return "direct commits"
	}
	return fmt.Sprintf("%d servers", res.Servers)
}

// stmLatencyHelp is the help of stm bank's and stm run's --latency.
const stmLatencyHelp = "time every committed transaction, from its first attempt to its commit, and print p50/p99/p99.9 (stm.RunOptions.Latency: on the GPU up to 1% of the commits a second)"

// latencyText is the value of the "commit latency:" line: the run's
// p50/p99/p99.9 when timed (stm.Latency.String), else "not timed
// (--latency)".
func latencyText(res *stm.Result, timed bool) string {
	if !timed {
		return "not timed (--latency)"
	}
	return res.Latency.String()
}

// reportBank prints a bank run's result, writes its history to the file
// history (if not "") and returns the run's error, else an error when the final total
// is not accounts x initial or a read-only transaction saw a wrong total;
// timed: the run timed its commits (--latency).
func reportBank(e *env, res *stm.Result, runErr error, history string, accounts int, initial uint64, timed bool) error {
	var total uint64
	for _, v := range res.Final {
		total += v
	}
	want := uint64(accounts) * initial
	fmt.Fprintf(e.stdout, "device: %s\n", res.Device)
	if res.Device != "cpu" { // the CPU engine has one commit path
		fmt.Fprintf(e.stdout, "commit: %s\n", stmCommitText(res))
	}
	fmt.Fprintf(e.stdout, "commits: %d (update %d, read-only %d)\n", res.Total(), res.Commits, res.ReadOnlyCommits)
	fmt.Fprintf(e.stdout, "aborts: %s\n", res.AbortString())
	fmt.Fprintf(e.stdout, "commits/s: %.0f\n", res.Throughput())
	fmt.Fprintf(e.stdout, "elapsed: %v\n", res.Elapsed.Round(time.Microsecond))
	fmt.Fprintf(e.stdout, "commit latency: %s\n", latencyText(res, timed))
	// Balances are uint64 and wrap, so totals are sums mod 2^64: say so
	// where accounts x initial does not fit in 64 bits.
	mod := ""
	if hi, _ := bits.Mul64(uint64(accounts), initial); hi != 0 {
		mod = " (mod 2^64: accounts x initial exceeds 2^64)"
	}
	fmt.Fprintf(e.stdout, "final total: %d%s\n", total, mod)
	fmt.Fprintf(e.stdout, "wrong read-only totals: %d\n", res.Wrong)
	if history != "" {
		if err := writeHistoryFile(history, res.History); err != nil {
			return errors.Join(runErr, fmt.Errorf("stm bank: --history: %w", err))
		}
	}
	switch {
	case runErr != nil:
		return runErr
	case total != want:
		return fmt.Errorf("stm bank: final total %d, want %d accounts x %d = %d%s", total, accounts, initial, want, mod)
	case res.Wrong != 0:
		return fmt.Errorf("stm bank: %d read-only transactions saw a wrong total", res.Wrong)
	}
	return nil
}
