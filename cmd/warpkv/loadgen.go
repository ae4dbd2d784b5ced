package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/warpkv/warpkv/loadgen"
)

// listFlag is a flag that may be given more than once.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// runLoadgen loads one or more memcached-compatible servers with the
// chosen workloads and prints their throughput and latencies side by side.
func runLoadgen(e *env, args []string) error {
	p, err := planLoadgen(e, args)
	if err != nil {
		return err
	}
	return p.run(e)
}

// loadgenPlan is a checked loadgen command line: what run does.
type loadgenPlan struct {
	targets   []loadgen.Target
	workloads []loadgen.Workload
	cfg       loadgen.Config
	keys      int
	warmup    time.Duration // as given: 0 is none (cfg.Warmup is then negative)
	jsonPath  string
}

// planLoadgen parses and checks loadgen's flags, runs nothing, and returns
// what to run; bench serve checks the loadgen flags it passes on with it.
func planLoadgen(e *env, args []string) (*loadgenPlan, error) {
	fs := newFlagSet(e, "loadgen", "warpkv loadgen --addr HOST:PORT [--addr HOST:PORT ...] [--name NAME ...] [flags]")
	var addrs, names listFlag
	fs.Var(&addrs, "addr", "server `HOST:PORT` to load (repeat to compare servers; ratios are to the first)")
	fs.Var(&names, "name", "`NAME` of the server at the --addr in the same position (default: the address)")
	sizes := fs.String("workloads", "all", "key/value sizes of the Mega-KV paper: all, or some of a (8/8 B), b (16/64), c (32/512), d (128/1024)")
	mixes := fs.String("mix", "95:5,100:0", "GET:SET operation mixes, comma-separated, each two percentages summing to 100")
	dists := fs.String("dist", "uniform,zipf", "key popularity: uniform and/or zipf (theta 0.99)")
	keys := fs.Int("keys", loadgen.DefaultKeys, "distinct keys, all preloaded")
	conns := fs.Int("conns", loadgen.DefaultConns, fmt.Sprintf("connections, 1 to %d", loadgen.MaxConns))
	pipeline := fs.Int("pipeline", loadgen.DefaultPipeline, fmt.Sprintf("requests in flight per connection, 1 to %d", loadgen.MaxPipeline))
	multiget := fs.Int("multiget", 1, "keys per get request, at least 1")
	duration := fs.Duration("duration", loadgen.DefaultDuration, "measured time per workload and server")
	warmup := fs.Duration("warmup", loadgen.DefaultWarmup, "unmeasured load before each measurement (0: none)")
	proto := fs.String("protocol", string(loadgen.Text), "text (get/set), binary (getkq.../getk, set) or meta (mg/mn, ms)")
	rate := fs.Float64("rate", 0, "pace the load at this many ops/s over all connections (0: as fast as the pipelines allow)")
	p99At := fs.Float64("p99-at", 0, "after each measurement, measure again paced at this fraction of its throughput (e.g. 0.8)")
	var pids listFlag
	fs.Var(&pids, "server-pid", "`PID` of the server process, on this machine, at the --addr in the same position (repeat for each; 0: that server is not measured): report its CPU time per million operations")
	serverStats := fs.String("server-stats", "", "stats `GROUP` of the server to report the change of over each measurement (- for the general group)")
	preload := fs.String("preload", "each", "each: preload before every workload; once: only when the key and value sizes change; none")
	seed := fs.Uint64("seed", 1, "seed of the key and operation choices (at least 1)")
	jsonPath := fs.String("json", "", "also write the rows as JSON to `FILE`")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	driver := fs.String("driver", "", "what drives the connections: loops (event loops in epoll_wait, one per CPU; Linux) or goroutines (two per connection); default loops where supported (paced runs with --pipeline above 1 always use goroutines)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if len(addrs) == 0 {
		fs.Usage()
		return nil, usagef("no --addr")
	}
	if len(names) > len(addrs) {
		return nil, usagef("%d --name flags for %d --addr flags", len(names), len(addrs))
	}
	if len(pids) > len(addrs) {
		return nil, usagef("%d --server-pid flags for %d --addr flags (one per server, in the same order)", len(pids), len(addrs))
	}
	var targets []loadgen.Target
	for i, a := range addrs {
		name := a
		if i < len(names) {
			name = names[i]
		}
		targets = append(targets, loadgen.Target{Name: name, Addr: a})
	}
	// A --server-pid whose CPU time cannot be read fails every run, after
	// its preload and warm-up: say so once, before anything runs.
	for i, p := range pids {
		pid, err := strconv.Atoi(p)
		switch {
		case err != nil || pid < 0:
			return nil, usagef("--server-pid %q: want a process id (0: not measured)", p)
		case pid == 0: // a place holder: the --addr in this position is not measured
			continue
		}
		if _, err := loadgen.ProcessCPU(pid); err != nil {
			return nil, fmt.Errorf("loadgen: --server-pid %d: no process to measure on this machine: %w (nothing was run)", pid, err)
		}
		targets[i].ServerPID = pid
	}
	// Every number is checked here, before anything runs: loadgen.Config
	// reads zero as "the default", which a flag must never silently mean.
	for _, err := range []error{
		inRange("--conns", *conns, 1, loadgen.MaxConns),
		inRange("--pipeline", *pipeline, 1, loadgen.MaxPipeline),
		atLeast("--multiget", *multiget, 1),
		atLeast("--keys", *keys, 1),
		atLeast("--seed", *seed, 1),
		checkOutput("loadgen", "--json", *jsonPath),
	} {
		if err != nil {
			return nil, err
		}
	}
	switch {
	case *duration <= 0:
		return nil, usagef("--duration %v: want a positive duration", *duration)
	case *warmup < 0:
		return nil, usagef("--warmup %v: want 0 (none) or a positive duration", *warmup)
	case !(*rate >= 0):
		return nil, usagef("--rate %v: want 0 (as fast as the pipelines allow) or ops/s", *rate)
	case !(*p99At >= 0 && *p99At < 1):
		return nil, usagef("--p99-at %v: want 0 (off) or a fraction below 1", *p99At)
	}
	switch loadgen.Protocol(*proto) {
	case loadgen.Text, loadgen.Binary, loadgen.Meta:
	default:
		return nil, usagef("--protocol %q: want text, binary or meta", *proto)
	}
	workloads, err := parseWorkloads(*sizes, *mixes, *dists, *keys)
	if err != nil {
		return nil, err
	}
	for _, w := range workloads {
		if err := inRange("--keys", *keys, 1, loadgen.MaxKeys(w.KeySize)); err != nil {
			return nil, usagef("%v (workload %s has %d-byte keys)", err, w.Name, w.KeySize)
		}
		if err := inRange("--multiget", *multiget, 1, loadgen.MaxMultiGet(w.KeySize)); err != nil {
			return nil, usagef("%v (workload %s has %d-byte keys; a request line stays within 1 MiB)", err, w.Name, w.KeySize)
		}
	}
	wu := *warmup
	if wu == 0 {
		wu = -1 // none: loadgen.Config reads 0 as its default warm-up
	}
	cfg := loadgen.Config{Conns: *conns, Pipeline: *pipeline, MultiGet: *multiget, Duration: *duration,
		Warmup: wu, Seed: *seed, Protocol: loadgen.Protocol(*proto), Rate: *rate, RateFraction: *p99At,
		ServerStats: *serverStats, Driver: loadgen.Driver(*driver)}
	switch *preload {
	case "each":
	case "once":
		cfg.PreloadOnce = true
	case "none":
		cfg.NoPreload = true
	default:
		return nil, usagef("--preload %q: want each, once or none", *preload)
	}
	if *rate > 0 && *p99At > 0 {
		return nil, usagef("--rate and --p99-at exclude each other")
	}
	if !*quiet {
		cfg.Progress = e.stderr
	}
	// Check the settings once, before any run.
	check := cfg
	check.Addr, check.Workload = targets[0].Addr, workloads[0]
	for _, w := range workloads {
		check.Workload = w
		if err := check.Check(); err != nil {
			return nil, usagef("%v", err)
		}
	}
	return &loadgenPlan{targets: targets, workloads: workloads, cfg: cfg, keys: *keys, warmup: *warmup, jsonPath: *jsonPath}, nil
}

// run loads the targets and prints (and saves) the rows.
func (p *loadgenPlan) run(e *env) error {
	cfg, targets, workloads := p.cfg, p.targets, p.workloads
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pace := ""
	switch {
	case cfg.Rate > 0:
		pace = fmt.Sprintf(", paced at %.0f ops/s", cfg.Rate)
	case cfg.RateFraction > 0:
		pace = fmt.Sprintf(", then paced at %.0f%% of the throughput", 100*cfg.RateFraction)
	}
	fmt.Fprintf(e.stdout, "%d connections, pipeline %d, %d keys per get, %s protocol, %d keys, %v measured after %v warm-up%s\n\n",
		cfg.Conns, cfg.Pipeline, cfg.MultiGet, cfg.Protocol, p.keys, cfg.Duration, p.warmup, pace)
	rows, runErr := loadgen.Compare(ctx, targets, workloads, cfg)
	if err := loadgen.WriteTable(e.stdout, rows); err != nil {
		return err
	}
	if p.jsonPath != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err == nil {
			err = os.WriteFile(p.jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			return fmt.Errorf("loadgen: writing %s: %w", p.jsonPath, err)
		}
		fmt.Fprintf(e.stdout, "\nwrote %s\n", p.jsonPath)
	}
	if runErr != nil {
		return runErr
	}
	failed := 0
	for _, r := range rows {
		if r.Err != "" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("loadgen: %d of %d runs failed", failed, len(rows))
	}
	return nil
}

// parseWorkloads builds the workloads from the --workloads, --mix and
// --dist flags.
func parseWorkloads(sizes, mixes, dists string, keys int) ([]loadgen.Workload, error) {
	var names []string
	if sizes == "all" {
		for _, s := range loadgen.PaperSizes() {
			names = append(names, s.Name)
		}
	} else {
		names = strings.Split(sizes, ",")
	}
	var ratios []float64
	for _, m := range strings.Split(mixes, ",") {
		g, s, ok := strings.Cut(m, ":")
		gv, err1 := strconv.ParseFloat(g, 64)
		sv, err2 := strconv.ParseFloat(s, 64)
		if !ok || err1 != nil || err2 != nil || !(gv >= 0 && gv <= 100) || !(sv >= 0 && sv <= 100) {
			return nil, usagef("--mix %q: want GET:SET percentages from 0 to 100, e.g. 95:5", m)
		}
		if math.Abs(gv+sv-100) > 1e-9 {
			return nil, usagef("--mix %q: GET and SET percentages sum to %g, want 100 (e.g. 95:5)", m, gv+sv)
		}
		ratios = append(ratios, gv/100)
	}
	var zipf []bool
	for _, d := range strings.Split(dists, ",") {
		switch d {
		case "uniform":
			zipf = append(zipf, false)
		case "zipf":
			zipf = append(zipf, true)
		default:
			return nil, usagef("--dist %q: want uniform or zipf", d)
		}
	}
	ws, err := loadgen.Workloads(names, ratios, zipf, keys)
	if err != nil {
		return nil, usagef("--workloads: %v", err)
	}
	return ws, nil
}
