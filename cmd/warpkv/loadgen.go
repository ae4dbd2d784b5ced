package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/warpkv/warpkv/loadgen"
)

// listFlag is a flag that may be given more than once.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// runLoadgen loads one or more memcached-compatible servers with the
// chosen workloads and prints their throughput and latencies side by side.
func runLoadgen(e *env, args []string) error {
	fs := newFlagSet(e, "loadgen", "warpkv loadgen --addr HOST:PORT [--addr HOST:PORT ...] [--name NAME ...] [flags]")
	var addrs, names listFlag
	fs.Var(&addrs, "addr", "server `HOST:PORT` to load (repeat to compare servers; ratios are to the first)")
	fs.Var(&names, "name", "`NAME` of the server at the --addr in the same position (default: the address)")
	sizes := fs.String("workloads", "all", "key/value sizes of the Mega-KV paper: all, or some of a (8/8 B), b (16/64), c (32/512), d (128/1024)")
	mixes := fs.String("mix", "95:5,100:0", "GET:SET operation mixes")
	dists := fs.String("dist", "uniform,zipf", "key popularity: uniform and/or zipf (theta 0.99)")
	keys := fs.Int("keys", loadgen.DefaultKeys, "distinct keys, all preloaded")
	conns := fs.Int("conns", loadgen.DefaultConns, "connections")
	pipeline := fs.Int("pipeline", loadgen.DefaultPipeline, "requests in flight per connection")
	multiget := fs.Int("multiget", 1, "keys per get request")
	duration := fs.Duration("duration", loadgen.DefaultDuration, "measured time per workload and server")
	warmup := fs.Duration("warmup", loadgen.DefaultWarmup, "unmeasured load before each measurement")
	proto := fs.String("protocol", string(loadgen.Text), "text (get/set), binary (getkq.../getk, set) or meta (mg/mn, ms)")
	rate := fs.Float64("rate", 0, "pace the load at this many ops/s over all connections (0: as fast as the pipelines allow)")
	p99At := fs.Float64("p99-at", 0, "after each measurement, measure again paced at this fraction of its throughput (e.g. 0.8)")
	serverPID := fs.Int("server-pid", 0, "`PID` of the server process on this machine: report its CPU time per million operations")
	serverStats := fs.String("server-stats", "", "stats `GROUP` of the server to report the change of over each measurement (- for the general group)")
	preload := fs.String("preload", "each", "each: preload before every workload; once: only when the key and value sizes change; none")
	seed := fs.Uint64("seed", 1, "seed of the key and operation choices")
	jsonPath := fs.String("json", "", "also write the rows as JSON to `FILE`")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if len(addrs) == 0 {
		fs.Usage()
		return usagef("no --addr")
	}
	if len(names) > len(addrs) {
		return usagef("%d --name flags for %d --addr flags", len(names), len(addrs))
	}
	var targets []loadgen.Target
	for i, a := range addrs {
		name := a
		if i < len(names) {
			name = names[i]
		}
		targets = append(targets, loadgen.Target{Name: name, Addr: a})
	}
	workloads, err := parseWorkloads(*sizes, *mixes, *dists, *keys)
	if err != nil {
		return err
	}
	cfg := loadgen.Config{Conns: *conns, Pipeline: *pipeline, MultiGet: *multiget, Duration: *duration,
		Warmup: *warmup, Seed: *seed, Protocol: loadgen.Protocol(*proto), Rate: *rate, RateFraction: *p99At,
		ServerPID: *serverPID, ServerStats: *serverStats}
	switch *preload {
	case "each":
	case "once":
		cfg.PreloadOnce = true
	case "none":
		cfg.NoPreload = true
	default:
		return usagef("--preload %q: want each, once or none", *preload)
	}
	if *rate > 0 && *p99At > 0 {
		return usagef("--rate and --p99-at exclude each other")
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
			return usagef("%v", err)
		}
	}
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
		cfg.Conns, cfg.Pipeline, cfg.MultiGet, cfg.Protocol, *keys, cfg.Duration, cfg.Warmup, pace)
	rows, runErr := loadgen.Compare(ctx, targets, workloads, cfg)
	if err := loadgen.WriteTable(e.stdout, rows); err != nil {
		return err
	}
	if *jsonPath != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			return fmt.Errorf("loadgen: writing %s: %w", *jsonPath, err)
		}
		fmt.Fprintf(e.stdout, "\nwrote %s\n", *jsonPath)
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
		if !ok || err1 != nil || err2 != nil || gv < 0 || sv < 0 || gv+sv == 0 {
			return nil, usagef("--mix %q: want GET:SET, e.g. 95:5", m)
		}
		ratios = append(ratios, gv/(gv+sv))
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
