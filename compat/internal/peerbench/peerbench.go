package peerbench

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/warpkv/warpkv/bench"
)

// DefaultSingleMax is --single-max's default: peers skip cases larger than
// this (at 100M keys one goroutine needs minutes a case).
const DefaultSingleMax = 10_000_000

// Flags are the flags shared by the commands that measure peers on a
// bench suite's cases.
type Flags struct {
	Size      int    // --size: largest tree in keys (0: the suite's default)
	Reps      int    // --reps: timed repetitions behind each median
	PeerReps  int    // --peer-reps: the peers' timed repetitions (0 before Check: Reps)
	Device    string // --device: warpkv's engines (cpu; auto, gpu, gpu:N add the GPU engine)
	SingleMax int    // --single-max: largest case, in keys, the (single-goroutine) peers run
	Peers     string // --peers: peers to measure, comma-separated
	JSON      string // --json: also write the results as JSON to this file
	Quiet     bool   // --quiet: no progress lines on stderr
}

// Help is what differs between the commands in the shared flags.
type Help struct {
	Size      string // --size's help
	SingleMax string // --single-max's help
	Peers     string // --peers' default
	PeerNames string // the peers --peers accepts, for its help, e.g. "tidwall, google"
}

// Register defines the shared flags on fs. Cost: O(1).
func Register(fs *flag.FlagSet, h Help) *Flags {
	f := &Flags{}
	fs.IntVar(&f.Size, "size", 0, h.Size)
	fs.IntVar(&f.Reps, "reps", bench.DefaultReps, "timed repetitions behind each median")
	fs.IntVar(&f.PeerReps, "peer-reps", 0, "timed repetitions of the peers (0: --reps)")
	fs.StringVar(&f.Device, "device", "auto", "warpkv engines: cpu, or auto, gpu, gpu:N to add the GPU engine")
	fs.IntVar(&f.SingleMax, "single-max", DefaultSingleMax, h.SingleMax)
	fs.StringVar(&f.Peers, "peers", h.Peers, "peers to measure, comma-separated ("+h.PeerNames+"; empty: none)")
	fs.StringVar(&f.JSON, "json", "", "also write the results as JSON to `FILE`")
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress lines on stderr")
	return f
}

// Check reports whether the parsed command line is valid (no arguments;
// sizes and counts in range) and defaults PeerReps to Reps.
func (f *Flags) Check(fs *flag.FlagSet) bool {
	if fs.NArg() > 0 || f.Size < 0 || f.Reps < 1 || f.PeerReps < 0 || f.SingleMax < 0 {
		return false
	}
	if f.PeerReps == 0 {
		f.PeerReps = f.Reps
	}
	return true
}

// Progress returns where progress lines go: stderr, or nowhere with
// --quiet.
func (f *Flags) Progress() *bench.Progress {
	if f.Quiet {
		return nil
	}
	return bench.NewProgress(os.Stderr)
}

// Print writes rep to w as the bench suites' text output: the provenance, the engines,
// the notes, header (what the figures are: medians of how many runs, what
// the ratios compare), the results table and the summary table if the
// suite gives one; then, if jsonPath is not empty, the report as JSON to
// that file.
func Print(w io.Writer, rep *bench.Report, header, jsonPath string) error {
	if err := rep.Provenance.Print(w); err != nil {
		return err
	}
	for _, line := range rep.Engines {
		fmt.Fprintln(w, line)
	}
	for _, line := range rep.Notes {
		fmt.Fprintln(w, "note:", line)
	}
	fmt.Fprintf(w, "%s\n\n", header)
	if err := bench.PrintTable(w, rep.Results); err != nil {
		return err
	}
	if len(rep.Summary) > 0 {
		fmt.Fprintf(w, "\n%s\n\n", rep.SummaryTitle)
		if err := bench.PrintTable(w, rep.Summary); err != nil {
			return err
		}
	}
	if jsonPath != "" {
		return bench.SaveJSON(jsonPath, rep)
	}
	return nil
}
