package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// Report is the outcome of one benchmark suite: the environment it ran in
// and its results, in the order they were measured.
type Report struct {
	// Provenance: the commit, command line, device, driver, CPU and date
	// (top-level keys of the JSON).
	Provenance
	Suite      string    `json:"suite"`      // e.g. "limits", "prim"
	Started    time.Time `json:"started"`    // wall-clock start, UTC
	GoVersion  string    `json:"go_version"` // runtime.Version()
	GOOS       string    `json:"goos"`
	GOARCH     string    `json:"goarch"`
	CPUs       int       `json:"cpus"`    // runtime.NumCPU()
	Workers    int       `json:"workers"` // GOMAXPROCS when the suite ran
	Engines    []string  `json:"engines"` // one sentence per engine used: which and why
	Reps       int       `json:"reps"`    // timed repetitions behind each median
	Results    []Result  `json:"results"`
	Notes      []string  `json:"notes,omitempty"` // anything a reader must know to trust the numbers
	DurationS  float64   `json:"duration_s"`      // wall-clock seconds the whole suite took
	startedMon time.Time // monotonic start, for DurationS

	// Summary, when a suite gives one, is a short table printed after the
	// results (the art suite: its rows against the targets),
	// under SummaryTitle.
	Summary      []Result `json:"summary,omitempty"`
	SummaryTitle string   `json:"summary_title,omitempty"`
}

// NewReport starts a report for a suite with reps timed repetitions behind
// each median, stamping the environment, its provenance and the start.
// Cost: NewProvenance's.
func NewReport(suite string, reps int) *Report {
	now := time.Now()
	return &Report{
		Suite: suite, Started: now.UTC().Round(time.Second), GoVersion: runtime.Version(),
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(),
		Workers: runtime.GOMAXPROCS(0), Reps: reps, startedMon: now, Provenance: NewProvenance(),
	}
}

// add appends results to the report.
func (r *Report) add(res ...Result) { r.Results = append(r.Results, res...) }

// Finish records the suite's duration since NewReport.
func (r *Report) Finish() { r.DurationS = time.Since(r.startedMon).Seconds() }

// WriteJSON writes the report to w as indented JSON. It refuses results
// with non-finite numbers, which JSON cannot represent.
func WriteJSON(w io.Writer, r *Report) error {
	for _, res := range r.Results {
		if !res.finite() {
			return fmt.Errorf("bench: encoding report: result %q on %s has a non-finite number", res.Op, res.Engine)
		}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encoding report: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("bench: writing report: %w", err)
	}
	return nil
}

// SaveJSON writes the report as JSON to the file path, replacing it.
func SaveJSON(path string, r *Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: saving report: %w", err)
	}
	werr := WriteJSON(f, r)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	if cerr != nil {
		return fmt.Errorf("bench: saving report: %w", cerr)
	}
	return nil
}

// ReadJSON decodes a report written by WriteJSON.
func ReadJSON(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("bench: decoding report: %w", err)
	}
	return &r, nil
}
