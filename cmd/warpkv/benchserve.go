package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/loadgen"
	"github.com/warpkv/warpkv/protocol"
	"github.com/warpkv/warpkv/server"
)

// runBenchServe is "warpkv bench serve": it measures memcached and each
// warpkv engine, one server at a time, each in its own process pinned to
// the server CPUs, with the load generator ("warpkv loadgen") in another
// process pinned to the load CPUs, and prints for every workload each
// server's throughput, latency percentiles and CPU time per million
// operations (from the server process's own accounting) side by side, with
// ratios to the first server.
//
//	warpkv bench serve [flags] [-- loadgen flags]
func runBenchServe(e *env, args []string) error {
	fs := newFlagSet(e, "bench serve", "warpkv bench serve [--memcached PATH] [--engines gpu,cpu] [--server-cpus LIST] [--load-cpus LIST] [-t N] [-m MB] [--p99-at F] [--profile] [--crosscheck auto|none|PATH] [--json FILE] [--full] [--warpkv-flags FLAGS] [--load-driver loops|goroutines] [--unpipelined ...] [-- loadgen flags]")
	mcPath := fs.String("memcached", "memcached", "memcached binary to compare with (none: leave it out)")
	engines := fs.String("engines", "gpu,cpu", "warpkv engines to run, in order: floor for the reference server with no index (bench floor: the ceiling the load tool and the kernel leave any server), gpu, cpu, gpu:N, gpu/staged for the GPU engine with staged search calls, gpu/scheduler for its batches launched by the scheduler alone, gpu/concurrent for batches launched by their callers at once and searched at the same time, cpu/roundN (N 1, 2, 4, 8 or 16) for serve --round-conns N, cpu/roundall for whole rounds, /block or /park for serve --loop-wait, /loopsN for serve --loops N, /spinN for serve --loop-spin Nus, /epoll, /uring or /uringpoll for serve --loop-io; options join with +, as cpu/round1+block (empty: none)")
	warpkvPath := fs.String("warpkv", "", "warpkv binary for the servers and the load generator (default: this one)")
	serverCPUs := fs.String("server-cpus", "", "CPUs of the server processes, e.g. 0-7 (default: the first half of this process's CPUs)")
	loadCPUs := fs.String("load-cpus", "", "CPUs of the load generator, e.g. 8-15 (default: the other CPUs)")
	threads := fs.Int("t", 0, "server threads: memcached -t and warpkv -t (default: the number of server CPUs)")
	memMB := fs.Int64("m", 1024, "item memory of every server in megabytes")
	interval := fs.Duration("batch-interval", 0, "warpkv batch interval C (0: the engine's default)")
	policy := fs.String("batch-policy", "", "warpkv batch policy: load or fixed (default: the engine's)")
	p99At := fs.Float64("p99-at", 0.8, "also measure each workload paced at this fraction of the server's peak, for its p99 (0: no)")
	profile := fs.Bool("profile", false, "run warpkv with --profile and print where each microsecond of a request goes, stage by stage")
	crosscheck := fs.String("crosscheck", "auto", "independent load tool to cross-check one workload with: auto (memcaslap or memaslap if installed), none, or its path")
	jsonPath := fs.String("json", "", "also write everything measured as JSON to `FILE`")
	report := fs.String("report", "", "run nothing: print issue 14's targets table from saved --json reports (`FILES`, comma-separated)")
	full := fs.Bool("full", false, "run loadgen's whole default matrix (4 sizes x 2 mixes x 2 distributions, 10 s each: about 12 minutes for two servers) instead of the short default cases (under 2 minutes)")
	unpipelined := fs.Bool("unpipelined", false, "measure clients with one request in flight per connection instead (issue 19): --pipeline 1 at --unpipelined-conns, 100:0 and 95:5, loadgen and memaslap (95:5, its get:set config), memcached first and each server alone in its process pinned to --server-cpus; every server also paced at --p99-at of memcached's peak for p50, p99 and p99.9 at equal offered load")
	upConns := fs.String("unpipelined-conns", "64,512,4096", "connection counts of --unpipelined (`LIST`)")
	upDuration := fs.Duration("unpipelined-duration", 2*time.Second, "measured time of each --unpipelined row")
	loadDriver := fs.String("load-driver", "", "what drives the load generator's connections: loops or goroutines (loadgen --driver; default: loadgen's, loops on Linux)")
	warpkvFlags := fs.String("warpkv-flags", "", "more `FLAGS` for every warpkv server, space separated (e.g. \"--loops 32\")")
	var rest []string
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s (loadgen flags go after --)", strings.Join(fs.Args(), " "))
	}
	if *report != "" {
		return writeTargets(e.stdout, strings.Split(*report, ","))
	}
	if !*full {
		rest = append(quickServeCases(), rest...) // flags after -- override them
	}
	if *loadDriver != "" {
		if *loadDriver != string(loadgen.Loops) && *loadDriver != string(loadgen.Goroutines) {
			return usagef("--load-driver %q: want loops or goroutines", *loadDriver)
		}
		rest = append(rest, "--driver", *loadDriver)
	}
	if !(*p99At >= 0 && *p99At < 1) {
		return usagef("--p99-at %v: want 0 (off) or a fraction below 1", *p99At)
	}
	if err := checkBenchServe(*memMB, *threads, *engines, *interval, *policy, *jsonPath, rest); err != nil {
		return err
	}
	sCPUs, lCPUs, err := benchCPUs(*serverCPUs, *loadCPUs)
	if err != nil {
		return usagef("%v", err)
	}
	nThreads := *threads
	if nThreads <= 0 {
		nThreads = len(sCPUs)
	}
	exe := *warpkvPath
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("bench serve: finding the warpkv binary: %w", err)
		}
		if strings.HasSuffix(exe, ".test") {
			return usagef("bench serve: running inside %s, a test binary: pass --warpkv PATH", filepath.Base(exe))
		}
	}
	tmp, err := os.MkdirTemp("", "warpkv-bench-serve-")
	if err != nil {
		return fmt.Errorf("bench serve: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep := serveReport{Provenance: bench.NewProvenance(), Date: time.Now().UTC().Format(time.RFC3339), Host: hostName(), CPUs: runtime.NumCPU(),
		ServerCPUs: formatCPUList(sCPUs), LoadCPUs: formatCPUList(lCPUs), Threads: nThreads, MemoryMB: *memMB,
		LoadgenArgs: rest, GPU: gpuSummary()}
	servers := planServers(*mcPath, *engines, exe, nThreads, *memMB, *interval, *policy, *profile)
	for i := range servers {
		if servers[i].Warpkv {
			servers[i].Args = append(servers[i].Args, strings.Fields(*warpkvFlags)...)
		}
	}
	if *unpipelined {
		return benchUnpipelined(ctx, e, servers, exe, sCPUs, lCPUs, nThreads, *upConns, *upDuration, *p99At, *profile,
			*loadDriver, findMemaslap(*crosscheck), tmp, *jsonPath)
	}
	fmt.Fprintf(e.stdout, "bench serve: %s, %d CPUs; servers on CPUs %s (-t %d), load generator on CPUs %s; %s\n",
		rep.Host, rep.CPUs, rep.ServerCPUs, nThreads, rep.LoadCPUs, rep.GPU)
	ms := findMemaslap(*crosscheck)
	for _, sv := range servers {
		if sv.Skipped != "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("skipped %s: %s", sv.Name, sv.Skipped))
			fmt.Fprintf(e.stderr, "bench serve: skipped %s: %s\n", sv.Name, sv.Skipped)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		res := benchOne(ctx, e, sv, exe, sCPUs, lCPUs, rest, *p99At, *profile, ms, tmp)
		rep.Servers = append(rep.Servers, res)
		if res.Err != "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s", sv.Name, res.Err))
		}
	}
	if ms == "" && *crosscheck != "none" {
		rep.Notes = append(rep.Notes, "no cross-check: neither memcaslap nor memaslap is installed (Debian: libmemcached-tools)")
	}
	rep.Provenance.Print(e.stdout)
	writeServeReport(e.stdout, &rep)
	if *jsonPath != "" {
		b, err := json.MarshalIndent(&rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			return fmt.Errorf("bench serve: writing %s: %w", *jsonPath, err)
		}
		fmt.Fprintf(e.stdout, "\nwrote %s\n", *jsonPath)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("bench serve: interrupted")
	}
	ran := 0
	for _, s := range rep.Servers {
		if s.Err == "" {
			ran++
		}
	}
	if ran == 0 {
		return fmt.Errorf("bench serve: no server could be measured")
	}
	return nil
}

// quickServeCases are the load generator flags of a default bench serve
// run, given before the flags after "--" (so those override them): the
// Mega-KV paper's workload b (16 B keys, 64 B values) at 95:5 get:set,
// uniform and Zipf keys, 3 s measured after 0.5 s of warm-up. With the
// paced p99 run and the cross-check that is about 20 s per server, under
// 2 minutes for memcached and two warpkv engines; --full runs loadgen's
// whole default matrix instead.
func quickServeCases() []string {
	return []string{"--workloads", "b", "--mix", "95:5", "--dist", "uniform,zipf", "--duration", "3s", "--warmup", "500ms"}
}

// serveReport is everything bench serve measured (its JSON output).
type serveReport struct {
	// Provenance: commit, command line, device and driver, CPU, date
	// (top-level JSON keys commit, modified, command_line, device, ...).
	bench.Provenance
	Date, Host  string
	CPUs        int
	ServerCPUs  string
	LoadCPUs    string
	Threads     int
	MemoryMB    int64
	GPU         string
	LoadgenArgs []string
	Servers     []serverResult
	Notes       []string `json:",omitempty"`
}

// serverResult is one server's measurements.
type serverResult struct {
	Name    string
	Command []string
	PID     int
	// Affinity is the server process's CPU list as the kernel reports it.
	Affinity string
	Rows     []loadgen.Row
	// Pipeline is warpkv's engine statistics (stats) after the run.
	Pipeline map[string]float64 `json:",omitempty"`
	// TotalCPU is the server's whole CPU time (wait4 rusage), preloads
	// included.
	TotalCPU   time.Duration
	Crosscheck *crosscheck `json:",omitempty"`
	Err        string      `json:",omitempty"`
}

// crosscheck is one workload measured by an independent tool and by
// loadgen with the same shape.
type crosscheck struct {
	Tool, Shape            string
	ToolOpsPerSec          float64
	ToolServerCPUPerMop    time.Duration
	LoadgenOpsPerSec       float64
	LoadgenServerCPUPerMop time.Duration
	Err                    string `json:",omitempty"`
}

// plannedServer is a server to measure.
type plannedServer struct {
	Name    string
	Path    string
	Args    []string // without the port flag
	Warpkv  bool     // a warpkv server: Args[0] is "serve"
	Floor   bool     // warpkv's floor server (bench floor): Args[:2] are "bench floor"
	Skipped string
}

// memcached reports whether sv is the memcached server (the base of every
// ratio), neither a warpkv server nor the floor server.
func (sv plannedServer) memcached() bool { return !sv.Warpkv && !sv.Floor }

// args returns sv's command line arguments with the port flag in its
// place: first for memcached, after the subcommand for warpkv's.
func (sv plannedServer) args(port int) []string {
	p := []string{"-p", strconv.Itoa(port)}
	sub := 0
	switch {
	case sv.Warpkv:
		sub = 1
	case sv.Floor:
		sub = 2
	}
	return append(append(append([]string(nil), sv.Args[:sub]...), p...), sv.Args[sub:]...)
}

// floorEngine is the --engines name of the floor server (bench floor).
const floorEngine = "floor"

// benchServeConns is the connection limit (-c) of every server bench
// serve starts: loadgen's connections up to 4096 (issue 19's largest
// count), its preload's and memaslap's, with room for the descriptors
// memcached reserves out of its -c (at -c 4096 it refused part of 4096
// clients, and the run failed with a broken pipe).
const benchServeConns = 8192

// planServers lists memcached (unless none) and the warpkv engines, with
// the reason each one that cannot run here is skipped.
func planServers(mcPath, engines, exe string, threads int, memMB int64, interval time.Duration, policy string, profile bool) []plannedServer {
	var out []plannedServer
	if mcPath != "" && mcPath != "none" {
		sv := plannedServer{Name: fmt.Sprintf("memcached -t %d", threads)}
		if p, err := exec.LookPath(mcPath); err != nil {
			sv.Skipped = fmt.Sprintf("no memcached binary: %v", err)
		} else {
			sv.Path = p
			sv.Args = []string{"-U", "0", "-l", "127.0.0.1", "-t", strconv.Itoa(threads),
				"-m", strconv.FormatInt(memMB, 10), "-c", strconv.Itoa(benchServeConns)}
			if u, err := user.Current(); err == nil && u.Uid == "0" {
				sv.Args = append(sv.Args, "-u", "root")
			}
		}
		out = append(out, sv)
	}
	for _, spec := range strings.Split(engines, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		if spec == floorEngine {
			out = append(out, plannedServer{Name: fmt.Sprintf("floor -t %d", threads), Path: exe, Floor: true,
				Args: []string{"bench", "floor", "-l", "127.0.0.1", "-t", strconv.Itoa(threads)}})
			continue
		}
		dev, flags, _ := engineSpecFlags(spec)
		sv := plannedServer{Name: "warpkv " + spec, Path: exe, Warpkv: true,
			Args: []string{"serve", "-l", "127.0.0.1", "-t", strconv.Itoa(threads), "-m", strconv.FormatInt(memMB, 10),
				"-c", strconv.Itoa(benchServeConns), "--device", dev}}
		sv.Args = append(sv.Args, flags...)
		if interval != 0 {
			sv.Args = append(sv.Args, "--batch-interval", interval.String())
		}
		if policy != "" {
			sv.Args = append(sv.Args, "--batch-policy", policy)
		}
		if profile {
			sv.Args = append(sv.Args, "--profile")
		}
		if strings.HasPrefix(dev, "gpu") || dev == "auto" {
			if ok, why := gpu.Available(); !ok {
				sv.Skipped = "no usable GPU: " + why
			}
		}
		out = append(out, sv)
	}
	return out
}

// engineSpecFlags parses a --engines spec, DEV[/OPT[+OPT...]], into its
// device option and the serve flags of its options: persistent or staged
// (--gpu-search), a server.SearchLaunchModes name (--search-launch), roundN with N
// 1, 2, 4, 8 or 16, or all (--round-conns), block or park (--loop-wait)
// loopsN with N 1 to 1024 (--loops N) and spinN with N 1 to 10000
// (--loop-spin Nµs), epoll, uring or uringpoll (--loop-io). "cpu/round1+block" is cpu with
// --round-conns 1 --loop-wait block. ok is false for an unknown option.
func engineSpecFlags(spec string) (dev string, flags []string, ok bool) {
	dev, opts, _ := strings.Cut(spec, "/")
	if opts == "" {
		return dev, nil, true
	}
	for _, opt := range strings.Split(opts, "+") {
		if server.IsSearchLaunch(opt) {
			flags = append(flags, "--search-launch", opt)
			continue
		}
		switch opt {
		case server.GPUSearchPersistent, server.GPUSearchStaged:
			flags = append(flags, "--gpu-search", opt)
		case server.LoopWaitBlock, server.LoopWaitPark:
			flags = append(flags, "--loop-wait", opt)
		case protocol.LoopIOEpoll, protocol.LoopIOUringPoll, protocol.LoopIOUring:
			flags = append(flags, "--loop-io", opt)
		default:
			if n, isRound := roundConnsSpec(opt); isRound {
				flags = append(flags, "--round-conns", n)
			} else if n, err := strconv.Atoi(strings.TrimPrefix(opt, "loops")); err == nil && strings.HasPrefix(opt, "loops") && n >= 1 && n <= 1024 {
				flags = append(flags, "--loops", strconv.Itoa(n))
			} else if n, err := strconv.Atoi(strings.TrimPrefix(opt, "spin")); err == nil && strings.HasPrefix(opt, "spin") && n >= 1 && n <= 10000 {
				flags = append(flags, "--loop-spin", strconv.Itoa(n)+"us")
			} else {
				return dev, nil, false
			}
		}
	}
	return dev, flags, true
}

// roundConnsSpec returns the serve --round-conns value of an engine
// spec's "roundN" option, N one of 1, 2, 4, 8 and 16, or "all" (whole
// rounds: more than any loop's connections).
func roundConnsSpec(opt string) (string, bool) {
	n, ok := strings.CutPrefix(opt, "round")
	if n == "all" {
		return "1048576", ok
	}
	switch n {
	case "1", "2", "4", "8", "16":
		return n, ok
	}
	return n, false
}

// benchCPUs resolves the server and load CPU sets: given lists, or the
// halves of this process's CPUs. The sets must not overlap, unless there is
// a single CPU.
func benchCPUs(serverList, loadList string) (srv, load []int, err error) {
	all, err := allowedCPUs()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case serverList != "":
		if srv, err = parseCPUList(serverList); err != nil {
			return nil, nil, fmt.Errorf("--server-cpus: %w", err)
		}
	case len(all) == 1:
		srv = all
	default:
		srv = all[:len(all)/2]
	}
	switch {
	case loadList != "":
		if load, err = parseCPUList(loadList); err != nil {
			return nil, nil, fmt.Errorf("--load-cpus: %w", err)
		}
	case len(all) == 1:
		load = all
	default:
		for _, c := range all {
			if !containsInt(srv, c) {
				load = append(load, c)
			}
		}
	}
	if len(load) == 0 {
		return nil, nil, fmt.Errorf("no CPUs left for the load generator (server CPUs %s of %s)", formatCPUList(srv), formatCPUList(all))
	}
	if len(all) > 1 {
		for _, c := range srv {
			if containsInt(load, c) {
				return nil, nil, fmt.Errorf("server CPUs %s and load CPUs %s overlap", formatCPUList(srv), formatCPUList(load))
			}
		}
	}
	for _, c := range append(append([]int{}, srv...), load...) {
		if !containsInt(all, c) {
			return nil, nil, fmt.Errorf("CPU %d is not available to this process (allowed: %s)", c, formatCPUList(all))
		}
	}
	return srv, load, nil
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// benchOne starts one server pinned to sCPUs, runs the load generator
// pinned to lCPUs against it (and the cross-check), and stops it.
func benchOne(ctx context.Context, e *env, sv plannedServer, exe string, sCPUs, lCPUs []int, lgArgs []string,
	p99At float64, profile bool, memaslap, tmp string) serverResult {
	res := serverResult{Name: sv.Name}
	port, err := freeTCPPort()
	if err != nil {
		res.Err = err.Error()
		return res
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := sv.args(port)
	res.Command = append([]string{sv.Path}, args...)
	logPath := filepath.Join(tmp, strings.NewReplacer(" ", "_", "/", "_").Replace(sv.Name)+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer logf.Close()
	cmd := exec.Command(sv.Path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := startPinned(cmd, sCPUs); err != nil {
		res.Err = fmt.Sprintf("start: %v", err)
		return res
	}
	res.PID = cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stopServer := func() {
		if stopped {
			return
		}
		stopped = true
		stopProcess(cmd, exited)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.TotalCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	defer stopServer()
	if err := waitListening(ctx, addr, exited, 120*time.Second); err != nil {
		res.Err = fmt.Sprintf("%v; log: %s", err, tailFile(logPath, 1500))
		return res
	}
	if cpus, err := processAffinity(res.PID); err == nil {
		res.Affinity = formatCPUList(cpus)
	}
	fmt.Fprintf(e.stderr, "bench serve: %s on %s (pid %d, CPUs %s)\n", sv.Name, addr, res.PID, res.Affinity)

	jsonOut := filepath.Join(tmp, "rows.json")
	os.Remove(jsonOut)
	la := []string{"loadgen", "--addr", addr, "--name", sv.Name, "--server-pid", strconv.Itoa(res.PID),
		"--preload", "once", "--json", jsonOut}
	if p99At > 0 {
		la = append(la, "--p99-at", strconv.FormatFloat(p99At, 'f', -1, 64))
	}
	if profile && sv.Warpkv {
		la = append(la, "--server-stats", "profile")
	}
	la = append(la, lgArgs...)
	var lgOut bytes.Buffer
	lgErr := runPinned(ctx, exe, la, lCPUs, &lgOut, e.stderr)
	if b, err := os.ReadFile(jsonOut); err == nil {
		if err := json.Unmarshal(b, &res.Rows); err != nil {
			lgErr = errors.Join(lgErr, fmt.Errorf("reading the load generator's rows: %w", err))
		}
	}
	if lgErr != nil {
		res.Err = fmt.Sprintf("load generator: %v: %s", lgErr, lastLines(lgOut.String(), 5))
	}
	if memaslap != "" && ctx.Err() == nil {
		res.Crosscheck = runCrosscheck(ctx, e, memaslap, exe, addr, res.PID, lCPUs, lgArgs, tmp)
	}
	if sv.Warpkv {
		if st, err := loadgen.FetchStats(addr, "-"); err == nil {
			res.Pipeline = st
		}
	}
	stopServer()
	return res
}

// stopProcess sends cmd's process SIGTERM and waits for it to exit (exited
// receives cmd.Wait's result), killing it after 20 s.
func stopProcess(cmd *exec.Cmd, exited <-chan error) {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// runPinned runs the warpkv binary with args pinned to cpus, with
// GOMAXPROCS set to their number; stdout goes to out, stderr to errw.
func runPinned(ctx context.Context, exe string, args []string, cpus []int, out, errw io.Writer) error {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(len(cpus)))
	cmd.Stdout, cmd.Stderr = out, errw
	if err := startPinned(cmd, cpus); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cmd.Process.Signal(os.Interrupt)
		return <-done
	}
}

// crosscheckShape is the workload of the cross-check: the Mega-KV paper's
// b (16-byte keys, the shortest memaslap takes; 64-byte values), 95:5,
// single gets, 16 connections with one request in flight each (memaslap
// does not pipeline).
const (
	crossConns    = 16
	crossDuration = 2 * time.Second
)

// runCrosscheck measures the crosscheck shape with memaslap and with
// loadgen against the server at addr.
func runCrosscheck(ctx context.Context, e *env, tool, exe, addr string, pid int, lCPUs []int, lgArgs []string, tmp string) *crosscheck {
	dur := crossDuration
	if d, ok := flagValue(lgArgs, "duration"); ok {
		if v, err := time.ParseDuration(d); err == nil && v < dur {
			dur = max(v, time.Second)
		}
	}
	cc := &crosscheck{Tool: filepath.Base(tool),
		Shape: fmt.Sprintf("16 B keys, 64 B values, 95:5 get:set, single gets, %d connections x 1 request in flight, %v", crossConns, dur)}
	cfg := filepath.Join(tmp, "memaslap.cfg")
	os.WriteFile(cfg, []byte("key\n16 16 1\nvalue\n64 64 1\ncmd\n0 0.05\n1 0.95\n"), 0o644)
	threads := min(len(lCPUs), crossConns)
	tps, cpu, err := runMemaslapTool(ctx, tool, []string{"-s", addr, "-F", cfg, "-t", fmt.Sprintf("%ds", int(dur.Seconds())),
		"-T", strconv.Itoa(threads), "-c", strconv.Itoa(crossConns)}, pid, lCPUs)
	if err != nil {
		cc.Err = fmt.Sprintf("%s: %v", cc.Tool, err)
	}
	cc.ToolOpsPerSec, cc.ToolServerCPUPerMop = tps, cpu
	jsonOut := filepath.Join(tmp, "cross.json")
	os.Remove(jsonOut)
	la := []string{"loadgen", "--addr", addr, "--server-pid", strconv.Itoa(pid), "--workloads", "b", "--mix", "95:5",
		"--dist", "uniform", "--conns", strconv.Itoa(crossConns), "--pipeline", "1", "--multiget", "1",
		"--duration", dur.String(), "--warmup", "250ms", "--json", jsonOut, "--quiet"}
	if err := runPinned(ctx, exe, la, lCPUs, io.Discard, e.stderr); err != nil {
		cc.Err = strings.TrimPrefix(cc.Err+"; loadgen: "+err.Error(), "; ")
	}
	var rows []loadgen.Row
	if b, err := os.ReadFile(jsonOut); err == nil && json.Unmarshal(b, &rows) == nil && len(rows) == 1 {
		cc.LoadgenOpsPerSec = rows[0].Result.OpsPerSec
		cc.LoadgenServerCPUPerMop = rows[0].Result.ServerCPUPerMop
	}
	return cc
}

// runMemaslapTool runs memaslap with args pinned to lCPUs and returns its
// final TPS and the server's (process pid) CPU time per million of its
// operations (0 when unknown).
func runMemaslapTool(ctx context.Context, tool string, args []string, pid int, lCPUs []int) (float64, time.Duration, error) {
	before, err1 := loadgen.ProcessCPU(pid)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := startPinned(cmd, lCPUs)
	if err == nil {
		err = cmd.Wait()
	}
	after, err2 := loadgen.ProcessCPU(pid)
	tps, ops, ok := parseMemaslap(out.String())
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("%v: %s", err, lastLines(out.String(), 3))
	case !ok:
		return 0, 0, fmt.Errorf("no TPS in its output: %s", lastLines(out.String(), 3))
	}
	var cpu time.Duration
	if err1 == nil && err2 == nil && ops > 0 {
		cpu = time.Duration(float64(after-before) * 1e6 / ops)
	}
	return tps, cpu, nil
}

var memaslapRE = regexp.MustCompile(`Run time: [0-9.]+s Ops: ([0-9]+) TPS: ([0-9]+)`)

// parseMemaslap finds memaslap's final "Run time: ... Ops: N TPS: N" line.
func parseMemaslap(out string) (tps, ops float64, ok bool) {
	m := memaslapRE.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return 0, 0, false
	}
	last := m[len(m)-1]
	ops, _ = strconv.ParseFloat(last[1], 64)
	tps, _ = strconv.ParseFloat(last[2], 64)
	return tps, ops, true
}

// findMemaslap resolves the --crosscheck flag to a tool path ("" for none).
func findMemaslap(flag string) string {
	switch flag {
	case "none", "":
		return ""
	case "auto":
		for _, n := range []string{"memcaslap", "memaslap"} {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
		}
		return ""
	}
	if p, err := exec.LookPath(flag); err == nil {
		return p
	}
	return ""
}

// flagValue returns the value of --name (or -name) in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// freeTCPPort returns a loopback port that was free a moment ago.
func freeTCPPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench serve: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until addr accepts connections, the process exits,
// or the timeout passes.
func waitListening(ctx context.Context, addr string, exited <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("server exited before listening: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not listening on %s after %v", addr, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tailFile returns the last n bytes of a file.
func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// lastLines returns the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// hostName returns the host's name, or "?".
func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
}

// gpuSummary names the GPUs, or why there are none usable.
func gpuSummary() string {
	if ok, why := gpu.Available(); !ok {
		return "no usable GPU (" + why + ")"
	}
	ps, err := gpu.List()
	if err != nil || len(ps) == 0 {
		return "GPU list unavailable"
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}
