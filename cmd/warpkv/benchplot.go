package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/internal/chart"
)

// runBenchPlot is "warpkv bench plot": it draws saved --json reports (of
// any bench suite, compat's peer benches, or bench serve) as a grouped bar
// chart in SVG: one group per case, warpkv's engines and the peers side by
// side, targets as marks, and prints each report's provenance.
func runBenchPlot(e *env, args []string) error {
	fs := newFlagSet(e, "bench plot", "warpkv bench plot REPORT.json... -o FILE.svg [--ops REGEXP] [--engine NAME]... [--summary] [--target REGEXP=RATE]... [--log] [--title TEXT] [--ylabel TEXT]")
	out := fs.String("o", "", "write the chart to `FILE` (SVG; PNG or PDF when it ends in .png or .pdf)")
	ops := fs.String("ops", "", "draw only the cases (op; bench serve: workload and keys per get) matching this `REGEXP`")
	var engines listFlag
	fs.Var(&engines, "engine", "draw only this engine or server, as the report names it (repeatable: bars in the order given; default: all, in report order)")
	summary := fs.Bool("summary", false, "draw the report's summary rows (bench art: its rows against the issue's targets, drawn as marks) instead of its results")
	logY := fs.Bool("log", false, "logarithmic rate axis")
	title := fs.String("title", "", "chart title (default: the suites and dates of the reports)")
	ylabel := fs.String("ylabel", "operations per second", "label of the rate axis (the reports' items per second)")
	var targets listFlag
	fs.Var(&targets, "target", "mark a target rate over the cases matching REGEXP: `REGEXP=RATE` (RATE with an optional k, M or G; repeatable)")
	var files []string
	for rest := args; ; {
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files, rest = append(files, fs.Arg(0)), fs.Args()[1:]
	}
	if len(files) == 0 {
		fs.Usage()
		return usagef("no report to plot")
	}
	if *out == "" {
		return usagef("no -o FILE.svg")
	}
	var opRE *regexp.Regexp
	if *ops != "" {
		re, err := regexp.Compile(*ops)
		if err != nil {
			return usagef("--ops: %v", err)
		}
		opRE = re
	}
	marks, err := parseTargets(targets)
	if err != nil {
		return usagef("%v", err)
	}
	var rows []plotRow
	var titles []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("bench plot: %w", err)
		}
		r, prov, name, err := readPlotRows(b, *summary)
		if err != nil {
			return fmt.Errorf("bench plot: %s: %w", f, err)
		}
		fmt.Fprintf(e.stdout, "%s (%s):\n", f, name)
		prov.Print(indent{e.stdout})
		titles = append(titles, name)
		rows = append(rows, r...)
	}
	c, err := buildChart(rows, opRE, engines, marks)
	if err != nil {
		return fmt.Errorf("bench plot: %w", err)
	}
	c.Log = *logY
	c.YLabel = *ylabel
	c.Title = *title
	if c.Title == "" {
		c.Title = strings.Join(titles, "; ")
	}
	format := "svg"
	switch strings.ToLower(filepath.Ext(*out)) {
	case ".png":
		format = "png"
	case ".pdf":
		format = "pdf"
	}
	var svg bytes.Buffer
	if err := c.Write(&svg, format); err != nil {
		return fmt.Errorf("bench plot: %w", err)
	}
	if err := os.WriteFile(*out, svg.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bench plot: %w", err)
	}
	fmt.Fprintf(e.stdout, "wrote %s: %d cases x %d series, %d target marks\n", *out, len(c.Groups), len(c.Series), len(c.Targets))
	return nil
}

// indent prefixes every line written with two spaces.
type indent struct {
	w interface{ Write([]byte) (int, error) }
}

func (d indent) Write(p []byte) (int, error) {
	s := strings.ReplaceAll(strings.TrimRight(string(p), "\n"), "\n", "\n  ")
	if _, err := fmt.Fprintf(d.w, "  %s\n", s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// plotRow is one measured rate: a case, the engine or server, and the
// target it was measured against (0: none).
type plotRow struct {
	Case, Series string
	Rate, Target float64
}

// readPlotRows decodes a bench suite report or a bench serve report into
// rows, with its provenance and a short name (suite and date).
func readPlotRows(b []byte, summary bool) ([]plotRow, bench.Provenance, string, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, bench.Provenance{}, "", err
	}
	if _, ok := probe["Servers"]; ok {
		var rep serveReport
		if err := json.Unmarshal(b, &rep); err != nil {
			return nil, bench.Provenance{}, "", err
		}
		return servePlotRows(&rep), rep.Provenance, "bench serve " + dateOf(rep.Date), nil
	}
	rep, err := bench.ReadJSON(bytes.NewReader(b))
	if err != nil {
		return nil, bench.Provenance{}, "", err
	}
	if rep.Suite == "" {
		return nil, bench.Provenance{}, "", fmt.Errorf("neither a bench suite report nor a bench serve report")
	}
	src := rep.Results
	if summary {
		if len(rep.Summary) == 0 {
			return nil, bench.Provenance{}, "", fmt.Errorf("--summary: the %s report has no summary rows", rep.Suite)
		}
		src = rep.Summary
	}
	var rows []plotRow
	for _, r := range src {
		row := plotRow{Case: caseLabel(r.Op), Series: r.Engine, Rate: r.OpsPerSec}
		if r.RatioTo == "target" && r.Ratio > 0 {
			row.Target = r.OpsPerSec / r.Ratio
		}
		rows = append(rows, row)
	}
	name := rep.Suite
	if !rep.Started.IsZero() {
		name += " " + rep.Started.Format("2006-01-02")
	}
	return rows, rep.Provenance, name, nil
}

// servePlotRows turns a bench serve report into rows: one case per workload
// and keys per get, one series per server, with issue 14's target for the
// GPU engine (1.5x memcached on single gets, 2x on multi-gets) as marks.
func servePlotRows(rep *serveReport) []plotRow {
	var rows []plotRow
	mc := map[string]float64{}
	for _, s := range rep.Servers {
		for _, r := range s.Rows {
			if r.Err != "" {
				continue
			}
			c := fmt.Sprintf("%s, %d keys/get", r.Workload, max(1, r.Result.MultiGet))
			if serverRole(s.Name) == "memcached" {
				mc[c] = r.Result.OpsPerSec
			}
			rows = append(rows, plotRow{Case: c, Series: s.Name, Rate: r.Result.OpsPerSec})
		}
	}
	for i, r := range rows {
		if serverRole(r.Series) == "gpu" && mc[r.Case] > 0 {
			target := 1.5
			if !strings.HasSuffix(r.Case, " 1 keys/get") {
				target = 2
			}
			rows[i].Target = target * mc[r.Case]
		}
	}
	return rows
}

// caseLabel shortens a long op to its part before a parenthesis.
func caseLabel(op string) string {
	if len(op) > 48 {
		if i := strings.Index(op, " ("); i > 0 {
			return op[:i]
		}
	}
	return op
}

func dateOf(rfc3339 string) string {
	if len(rfc3339) >= 10 {
		return rfc3339[:10]
	}
	return rfc3339
}

// rateLabel formats a rate with a k, M or G suffix.
func rateLabel(v float64) string {
	if v >= 1e9 {
		return fmt.Sprintf("%.3gG", v/1e9)
	}
	return siRate(v)
}

// targetMark is a --target flag: a rate over the cases matching re.
type targetMark struct {
	re   *regexp.Regexp
	rate float64
}

// parseTargets parses --target REGEXP=RATE flags.
func parseTargets(flags []string) ([]targetMark, error) {
	var out []targetMark
	for _, f := range flags {
		i := strings.LastIndex(f, "=")
		if i <= 0 {
			return nil, fmt.Errorf("--target %q: want REGEXP=RATE", f)
		}
		re, err := regexp.Compile(f[:i])
		if err != nil {
			return nil, fmt.Errorf("--target %q: %v", f, err)
		}
		rate, err := parseRate(f[i+1:])
		if err != nil {
			return nil, fmt.Errorf("--target %q: %v", f, err)
		}
		out = append(out, targetMark{re, rate})
	}
	return out, nil
}

// parseRate parses a rate with an optional k, M or G suffix.
func parseRate(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1e9, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("bad rate %q", s)
	}
	return v * mult, nil
}

// buildChart groups rows into cases (first appearance order) and series
// (the order of engines, else first appearance), keeping the cases opRE
// matches; the last row of a case and series wins.
func buildChart(rows []plotRow, opRE *regexp.Regexp, engines []string, marks []targetMark) (*chart.Chart, error) {
	order := engines
	keep := func(series string) bool {
		if len(order) == 0 {
			return true
		}
		for _, o := range order {
			if o == series {
				return true
			}
		}
		return false
	}
	caseIdx, seriesIdx := map[string]int{}, map[string]int{}
	var cases, series []string
	for _, s := range order {
		seriesIdx[s] = len(series)
		series = append(series, s)
	}
	for _, r := range rows {
		if opRE != nil && !opRE.MatchString(r.Case) || !keep(r.Series) {
			continue
		}
		if _, ok := caseIdx[r.Case]; !ok {
			caseIdx[r.Case] = len(cases)
			cases = append(cases, r.Case)
		}
		if _, ok := seriesIdx[r.Series]; !ok {
			seriesIdx[r.Series] = len(series)
			series = append(series, r.Series)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no rows match (--ops, --engine)")
	}
	c := &chart.Chart{Groups: cases, YLabel: "operations per second", Format: rateLabel}
	for _, s := range series {
		vals := make([]float64, len(cases))
		for i := range vals {
			vals[i] = math.NaN()
		}
		c.Series = append(c.Series, chart.Series{Name: s, Values: vals})
	}
	for _, r := range rows {
		ci, ok := caseIdx[r.Case]
		si, ok2 := seriesIdx[r.Series]
		if !ok || !ok2 {
			continue
		}
		c.Series[si].Values[ci] = r.Rate
		if r.Target > 0 {
			c.Targets = append(c.Targets, chart.Target{Group: ci, Series: si, Value: r.Target})
		}
	}
	for _, m := range marks {
		for ci, name := range cases {
			if m.re.MatchString(name) {
				c.Targets = append(c.Targets, chart.Target{Group: ci, Series: -1, Value: m.rate})
			}
		}
	}
	return c, nil
}
