package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/stm"
)

// Defaults of "warpkv stm run".
const (
	stmRunDefaultItems    = 1 << 20
	stmRunDefaultDuration = time.Second
	stmRunDefaultAccesses = 16
)

const stmRunSynopsis = "warpkv stm run --body FILE.cu [--device gpu|gpu:N] [--items N] [--threads N] [--duration D | --transactions N] " +
	"[--read-only PCT] [--init V] [--param V]... [--max-reads N] [--max-writes N] [--servers N] [--throttle R] [--chain N] [--migrate N] [--contention MODE] [--commit PATH] [--seed S] [--check=false] [--history FILE] [--latency] [--quiet]"

// paramList is a repeatable --param: the body's parameters 1, 2, ...
type paramList []uint64

func (p *paramList) String() string { return fmt.Sprint([]uint64(*p)) }

func (p *paramList) Set(s string) error {
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return fmt.Errorf("want an unsigned 64-bit number")
	}
	*p = append(*p, v)
	return nil
}

// stmRunFlags are the flags of "warpkv stm run".
type stmRunFlags struct {
	body, device, history   string
	items, threads, servers int
	chain, migrate          int
	maxReads, maxWrites     int
	duration                time.Duration
	transactions            int64
	readOnly, throttle      float64
	contention              stm.Contention
	init, seed              uint64
	params                  paramList
	check, quiet, latency   bool
	commit                  stm.CommitPath
	set                     map[string]bool
}

// runSTMBody is "warpkv stm run": a user's CUDA transaction body on the GPU
// engine. The body is compiled with NVRTC first (so its mistakes are
// reported without a GPU too), then run; the run reports commits, aborts by
// cause, wrong reads counted by stm_check and, unless --check=false, the
// opacity check of every attempt and the serial replay of the committed
// history.
func runSTMBody(e *env, args []string) error {
	f, err := parseSTMRun(e, args)
	if err != nil {
		return err
	}
	// The history is written after the run: a path that cannot be written
	// must fail now, not after it (README: output files are checked first).
	if err := checkOutput("stm run", "--history", f.history); err != nil {
		return err
	}
	src, err := os.ReadFile(f.body)
	if err != nil {
		return fmt.Errorf("stm run: --body: %w", err)
	}
	w := stm.CUDA{Label: f.body, Body: string(src), Size: f.items,
		MaxReads: f.maxReads, MaxWrites: f.maxWrites, MaxReadOnlyReads: f.maxReads,
		Param: append([]uint64{uint64(f.readOnly*1e4 + 0.5)}, f.params...)}
	if f.init != 0 {
		v := f.init
		w.Init = func(int) uint64 { return v }
	}
	if _, _, err := gpu.NVRTCVersion(); err != nil {
		return fmt.Errorf("stm run: a CUDA body is compiled with NVRTC and runs on the GPU engine only, and NVRTC cannot be loaded here (set %s to its path): %w", gpu.EnvLibNVRTC, err)
	}
	if err := w.Compile(); err != nil {
		return fmt.Errorf("stm run: %w", err)
	}
	eng, err := stm.Open(stm.Options{Device: f.device, ClientThreads: f.threads, Throttle: f.throttle, Chain: f.chain, Migrate: f.migrate, Contention: f.contention, Commit: f.commit, Config: stm.Config{Servers: f.servers}})
	if err != nil {
		return err
	}
	defer eng.Close()
	if !f.quiet {
		fmt.Fprintln(e.stderr, eng.Reason())
	}
	if eng.Backend() != gpu.BackendGPU {
		return fmt.Errorf("stm run: a CUDA body runs on the GPU engine only, and %s", eng.Reason())
	}
	ro := stm.RunOptions{Seed: f.seed, History: f.check, HistoryAborted: f.check, Latency: f.latency}
	if f.set["transactions"] {
		ro.Transactions = f.transactions
	} else {
		ro.Duration = f.duration
	}
	start := time.Now()
	res, runErr := eng.Run(w, ro)
	if res == nil {
		return runErr
	}
	if !f.quiet && runErr == nil {
		// A checked run spends most of its time outside the transactions:
		// say where, before the checks start.
		tm := eng.LastBatch()
		fmt.Fprintf(e.stderr, "stm run: the run took %v: kernels and store set up in %v, transactions run for %v, results read in %v (%d recorded attempts)\n",
			time.Since(start).Round(time.Millisecond), tm.Upload.Round(time.Millisecond), tm.Work.Round(time.Millisecond),
			tm.Download.Round(time.Millisecond), len(res.History))
	}
	return reportSTMRun(e, f, w, res, runErr)
}

// parseSTMRun parses and checks the flags of "warpkv stm run".
func parseSTMRun(e *env, args []string) (*stmRunFlags, error) {
	f := &stmRunFlags{set: map[string]bool{}}
	fs := newFlagSet(e, "stm run", stmRunSynopsis)
	fs.StringVar(&f.body, "body", "", "`FILE` of CUDA C defining __device__ void stm_body(stm_tx* tx) (see go doc github.com/warpkv/warpkv/stm)")
	fs.StringVar(&f.device, "device", "gpu", "the GPU: gpu or gpu:N (a CUDA body runs on the GPU engine only)")
	fs.IntVar(&f.items, "items", stmRunDefaultItems, "items N of the store (the body uses items 0 to N-1)")
	fs.IntVar(&f.threads, "threads", 0, "transactions running at once (0: the engine's default)")
	fs.DurationVar(&f.duration, "duration", stmRunDefaultDuration, "run for this long (not with --transactions)")
	fs.Int64Var(&f.transactions, "transactions", 0, "commit this many transactions instead of running for --duration")
	fs.Float64Var(&f.readOnly, "read-only", 0, "share of read-only transactions in percent, given to the body as stm_param(tx, 0) in parts per million")
	fs.Uint64Var(&f.init, "init", 0, "every item's initial value")
	fs.Var(&f.params, "param", "a parameter of the body, stm_param(tx, 1), (tx, 2), ... in order (repeatable)")
	fs.IntVar(&f.maxReads, "max-reads", stmRunDefaultAccesses, "most items one transaction reads (its read set)")
	fs.IntVar(&f.maxWrites, "max-writes", stmRunDefaultAccesses, "most items one transaction writes (its write set)")
	fs.IntVar(&f.servers, "servers", 0, "commit servers, items partitioned over them (0: the engine's default: one per 8 SMs of the GPU, at most one per LogSize/8 items; use 1 when transactions reach across the store)")
	fs.Float64Var(&f.throttle, "throttle", 0, stmThrottleHelp)
	fs.IntVar(&f.chain, "chain", 0, stmChainHelp)
	fs.IntVar(&f.migrate, "migrate", 0, stmMigrateHelp)
	contention := fs.String("contention", "default", stmContentionHelp)
	commit := fs.String("commit", "auto", stmCommitHelp)
	direct := fs.Bool("direct", false, stmDirectHelp)
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the transactions (stm_rand)")
	fs.BoolVar(&f.check, "check", true, "record every attempt and check opacity and serializability (costs throughput; false for speed)")
	fs.StringVar(&f.history, "history", "", "write every committed transaction as a JSON line to `FILE` (needs --check)")
	fs.BoolVar(&f.quiet, "quiet", false, "no engine line on stderr")
	fs.BoolVar(&f.latency, "latency", false, stmLatencyHelp)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("stm run takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	var contErr, commitErr error
	f.contention, contErr = stm.ParseContention(*contention)
	f.commit, commitErr = stmCommitPath(*commit, *direct)
	switch {
	case f.body == "":
		return nil, usagef("--body FILE.cu is required")
	case f.set["transactions"] && f.set["duration"]:
		return nil, usagef("--transactions and --duration exclude each other")
	case f.items < 1 || f.items > stm.MaxItems:
		return nil, usagef("--items %d: want 1 to %d", f.items, stm.MaxItems)
	case f.threads < 0:
		return nil, usagef("--threads %d: want 0 (default) or more", f.threads)
	case !f.set["transactions"] && f.duration <= 0:
		return nil, usagef("--duration %v: want a positive duration", f.duration)
	case f.set["transactions"] && f.transactions < 1:
		return nil, usagef("--transactions %d: want at least 1", f.transactions)
	case f.readOnly < 0 || f.readOnly > 100 || f.readOnly != f.readOnly:
		return nil, usagef("--read-only %g: want a percentage from 0 to 100", f.readOnly)
	case len(f.params) > 15:
		return nil, usagef("%d --param values: at most 15 (parameter 0 is --read-only)", len(f.params))
	case f.maxReads < 1 || f.maxWrites < 1:
		return nil, usagef("--max-reads %d, --max-writes %d: want at least 1 each", f.maxReads, f.maxWrites)
	case f.servers < 0 || f.servers > stm.MaxServers:
		return nil, usagef("--servers %d: want 0 (default) to %d", f.servers, stm.MaxServers)
	case f.throttle >= 1 || f.throttle != f.throttle:
		return nil, usagef("--throttle %g: %s", f.throttle, stmThrottleWant)
	case f.chain > stm.MaxChain:
		return nil, usagef("--chain %d: want at most %d passes (0: the engine's default, negative: none)", f.chain, stm.MaxChain)
	case contErr != nil:
		return nil, usagef("--contention %q: want default, off, check or claims", *contention)
	case commitErr != nil:
		return nil, commitErr
	case f.history != "" && !f.check:
		return nil, usagef("--history needs --check (the history is what --check records)")
	}
	spec, err := gpu.ParseSpec(f.device)
	if err != nil {
		return nil, usagef("--device: %v", err)
	}
	if spec.Backend != gpu.BackendGPU {
		return nil, usagef("--device %q: a CUDA body runs on the GPU engine only (gpu or gpu:N)", f.device)
	}
	return f, nil
}

// reportSTMRun prints what the run did and checks it: the run's own error,
// wrong reads (stm_check), opacity and the serial replay.
func reportSTMRun(e *env, f *stmRunFlags, w stm.CUDA, res *stm.Result, runErr error) error {
	fmt.Fprintf(e.stdout, "device: %s\n", res.Device)
	fmt.Fprintf(e.stdout, "body: %s (%d items, %d threads, %s)\n", f.body, f.items, res.Threads, stmCommitText(res))
	fmt.Fprintf(e.stdout, "commits: %d (update %d, read-only %d)\n", res.Total(), res.Commits, res.ReadOnlyCommits)
	fmt.Fprintf(e.stdout, "aborts: %s\n", res.AbortString())
	fmt.Fprintf(e.stdout, "given up (stm_abort): %d\n", res.UserAborts)
	fmt.Fprintf(e.stdout, "commits/s: %.0f\n", res.Throughput())
	fmt.Fprintf(e.stdout, "elapsed: %v\n", res.Elapsed.Round(time.Microsecond))
	fmt.Fprintf(e.stdout, "commit latency: %s\n", latencyText(res, f.latency))
	fmt.Fprintf(e.stdout, "wrong (stm_check): %d\n", res.Wrong)
	if res.HistoryLimited && !f.quiet {
		fmt.Fprintf(e.stderr, "stm run: the run ended after %d commits, before --duration %v: the GPU's history buffer holds no more (--check=false runs the whole duration)\n", res.Total(), f.duration)
	}
	var opErr, serErr error
	// The history file is written beside the checks (its writes overlap
	// their reads); its error is reported after their verdicts.
	var histErr error
	var wrote sync.WaitGroup
	if f.history != "" {
		wrote.Go(func() { histErr = writeHistoryFile(f.history, res.History) })
	}
	if !f.check {
		fmt.Fprintln(e.stdout, "opacity: not checked (--check=false)")
		fmt.Fprintln(e.stdout, "serializable: not checked (--check=false)")
	} else {
		initial := make([]uint64, f.items)
		for i := range initial {
			initial[i] = w.InitialValue(i)
		}
		aborted := 0
		for _, r := range res.History {
			if r.Aborted {
				aborted++
			}
		}
		// The two checks share one write index and one pass over the reads.
		start := time.Now()
		serErr, opErr = stm.CheckHistoryAndOpacity(initial, res.History, res.Final)
		if !f.quiet {
			fmt.Fprintf(e.stderr, "stm run: checked %d attempts in %v\n", len(res.History), time.Since(start).Round(time.Millisecond))
		}
		if opErr != nil {
			fmt.Fprintf(e.stdout, "opacity: FAILED: %v\n", opErr)
		} else {
			fmt.Fprintf(e.stdout, "opacity: ok (%d attempts, %d of them aborted, each read one snapshot; %d aborted attempts not recorded)\n",
				len(res.History), aborted, res.HistoryDropped)
		}
		if serErr != nil {
			fmt.Fprintf(e.stdout, "serializable: FAILED: %v\n", serErr)
		} else {
			fmt.Fprintf(e.stdout, "serializable: ok (%d commits replayed serially give the final store)\n", res.Total())
		}
	}
	wrote.Wait()
	if histErr != nil {
		return fmt.Errorf("stm run: --history: %w", histErr)
	}
	switch {
	case runErr != nil:
		return runErr
	case opErr != nil:
		return fmt.Errorf("stm run: %w", opErr)
	case serErr != nil:
		return fmt.Errorf("stm run: %w", serErr)
	case res.Wrong != 0:
		return fmt.Errorf("stm run: %d committed transactions failed stm_check", res.Wrong)
	}
	return nil
}

// writeHistoryFile writes the committed records of h as JSON lines.
func writeHistoryFile(path string, h []stm.Record) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := stm.WriteHistory(out, h); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
