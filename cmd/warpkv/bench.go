package main

import (
	"fmt"
	"strings"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/gpu"
)

// serveSuiteSummary describes "warpkv bench serve", which is not a
// bench.Suite (it starts servers and a load generator).
const serveSuiteSummary = "memcached against warpkv's engines end to end, through the load generator (warpkv bench serve -h)"

// suiteNames returns the names of every bench suite, serve last.
func suiteNames() []string {
	var names []string
	for _, s := range bench.Suites() {
		names = append(names, s.Name)
	}
	return append(names, "serve")
}

// runBench runs one benchmark suite and prints its results as a table,
// optionally also writing them as JSON. Progress goes to stderr.
func runBench(e *env, args []string) error {
	if len(args) > 0 && args[0] == "serve" {
		return runBenchServe(e, args[1:])
	}
	if len(args) > 0 && args[0] == "plot" {
		return runBenchPlot(e, args[1:])
	}
	if len(args) > 0 && args[0] == "floor" {
		return runBenchFloor(e, args[1:])
	}
	names := suiteNames()
	fs := newFlagSet(e, "bench", fmt.Sprintf("warpkv bench %s [--device auto|cpu|gpu|gpu:N] [--engines cpu,gpu] [--json FILE] [--size N] [--reps N]",
		strings.Join(names, "|")))
	device := fs.String("device", "", "engine: auto, cpu, gpu or gpu:N (default: $"+gpu.EnvDevice+", else auto)")
	jsonPath := fs.String("json", "", "also write the results as JSON to `FILE`")
	size := fs.Int("size", 0, "problem size in the suite's unit (0: the suite's default); refused when it cannot fit in memory")
	reps := fs.Int("reps", bench.DefaultReps, "timed repetitions behind each median, at least 1")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	engines := fs.String("engines", "", "engines to run, comma-separated: cpu, gpu (default: every engine the device allows; "+strings.Join(bench.EngineSuites, " and ")+" only; gpu alone without a GPU is an error)")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprintln(e.stderr, "\nsuites:")
		for _, s := range bench.Suites() {
			fmt.Fprintf(e.stderr, "  %-7s %s\n", s.Name, s.Summary)
		}
		fmt.Fprintf(e.stderr, "  %-7s %s\n", "serve", serveSuiteSummary)
		fmt.Fprintf(e.stderr, "\n  %-7s %s\n", "plot", "not a suite: draws saved --json reports as an SVG chart (warpkv bench plot -h)")
		fmt.Fprintf(e.stderr, "  %-7s %s\n", "floor", "not a suite: a reference server with no index that bench serve --engines floor measures beside memcached (warpkv bench floor -h)")
	}
	// Flags may come before or after the suite name.
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("missing suite name")
	}
	name := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments after suite %s: %s", name, strings.Join(fs.Args(), " "))
	}
	s, ok := bench.Lookup(name)
	if !ok {
		return usagef("unknown suite %q (want %s)", name, strings.Join(names, " or "))
	}
	if err := checkBench(name, *device, *engines, *jsonPath, *size, *reps); err != nil {
		return err
	}
	opts := bench.Options{Device: *device, Size: *size, Reps: *reps, Engines: *engines}
	if !*quiet {
		opts.Progress = e.stderr
	}
	rep, runErr := s.Run(opts)
	if rep == nil {
		return runErr
	}
	rep.Provenance.Print(e.stdout)
	for _, line := range rep.Engines {
		fmt.Fprintln(e.stdout, line)
	}
	for _, line := range rep.Notes {
		fmt.Fprintln(e.stdout, "note:", sayOnce(line, rep.Engines))
	}
	fmt.Fprintf(e.stdout, "median of %d runs; ratio: throughput relative to the named reference\n\n", rep.Reps)
	if err := bench.PrintTable(e.stdout, rep.Results); err != nil {
		return err
	}
	if len(rep.Summary) > 0 {
		fmt.Fprintf(e.stdout, "\n%s\n\n", rep.SummaryTitle)
		if err := bench.PrintTable(e.stdout, rep.Summary); err != nil {
			return err
		}
	}
	if *jsonPath != "" {
		if err := bench.SaveJSON(*jsonPath, rep); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nwrote %s\n", *jsonPath)
	}
	return runErr // partial results are printed and saved first
}

// sayOnce returns note with any engine line already printed (such as the
// reason no GPU is usable, which suites repeat in their notes) replaced by
// "see above", so that each reason is said once.
func sayOnce(note string, engines []string) string {
	for _, eng := range engines {
		if len(eng) >= 20 && strings.Contains(note, eng) {
			note = strings.Replace(note, eng, "see above", 1)
		}
	}
	return note
}
