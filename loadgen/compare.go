package loadgen

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Target is a server to load, by name.
type Target struct {
	Name, Addr string
	// ServerPID, when positive, is the process id of this target's
	// server: Compare measures its CPU time (Config.ServerPID) instead of
	// cfg's process, so that every server of a comparison is measured on
	// its own process.
	ServerPID int
}

// Row is one workload run against one target.
type Row struct {
	Workload string
	Target   string
	Result   Result
	// Ratio is the target's ops/s over the first target's for the same
	// workload (1 for the first; 0 where either failed).
	Ratio float64
	Err   string `json:",omitempty"`
}

// Compare runs every workload against every target in turn, with cfg's
// connection, pipeline, protocol and duration settings (cfg.Addr and
// cfg.Workload are ignored), and returns one row per workload and target.
// A failed run becomes a row with Err set, and the comparison goes on; an
// error is returned only when ctx ends. Cost: for each row a preload, the
// warm-up and the duration.
func Compare(ctx context.Context, targets []Target, workloads []Workload, cfg Config) ([]Row, error) {
	var rows []Row
	loaded := make([]Workload, len(targets)) // what each target was last preloaded with
	for _, w := range workloads {
		var first float64
		for i, t := range targets {
			c := cfg
			c.Addr, c.Workload = t.Addr, w
			if t.ServerPID > 0 {
				c.ServerPID = t.ServerPID
			}
			shape := Workload{KeySize: w.KeySize, ValueSize: w.ValueSize, Keys: w.Keys}
			if cfg.PreloadOnce && !cfg.NoPreload && loaded[i] == shape {
				c.NoPreload = true
			}
			res, err := Run(ctx, c)
			if !c.NoPreload {
				loaded[i] = Workload{}
				if err == nil {
					loaded[i] = shape
				}
			}
			row := Row{Workload: w.String(), Target: t.Name, Result: res}
			if err != nil {
				row.Err = err.Error()
			}
			if i == 0 && err == nil {
				first = res.OpsPerSec
			}
			if first > 0 && err == nil {
				row.Ratio = res.OpsPerSec / first
			}
			rows = append(rows, row)
			if ctx.Err() != nil {
				return rows, fmt.Errorf("loadgen: compare: %w", context.Cause(ctx))
			}
		}
	}
	return rows, nil
}

// WriteTable writes rows as an aligned text table: workload, target, ops/s,
// hit ratio, latency percentiles in µs, errors, the server's CPU seconds per
// million operations and the paced run's throughput and p99 (when
// measured), and the ratio to the first target. Failed rows show their
// error.
func WriteTable(w io.Writer, rows []Row) error {
	cpu, paced := false, false
	for _, r := range rows {
		cpu = cpu || r.Result.ServerCPU > 0
		paced = paced || r.Result.Paced != nil
	}
	head := []string{"workload", "target", "ops/s", "hit%", "p50µs", "p95µs", "p99µs", "p99.9µs", "errors"}
	if cpu {
		head = append(head, "cpu s/Mop")
	}
	if paced {
		head = append(head, "paced ops/s", "paced p99µs")
	}
	head = append(head, "ratio")
	table := [][]string{head}
	var failures []string
	for _, r := range rows {
		if r.Err != "" {
			row := make([]string, len(head))
			row[0], row[1], row[2] = r.Workload, r.Target, "failed"
			table = append(table, row)
			failures = append(failures, fmt.Sprintf("%s on %s: %s", r.Workload, r.Target, r.Err))
			continue
		}
		l := r.Result.Latency
		hit := "-"
		if r.Result.Gets > 0 {
			hit = fmt.Sprintf("%.1f", 100*r.Result.HitRatio)
		}
		row := []string{r.Workload, r.Target, si(r.Result.OpsPerSec), hit,
			micros(l.P50), micros(l.P95), micros(l.P99), micros(l.P999), fmt.Sprint(r.Result.Errors)}
		if cpu {
			row = append(row, cpuPerMop(r.Result.ServerCPUPerMop))
		}
		if paced {
			if p := r.Result.Paced; p != nil {
				row = append(row, si(p.OpsPerSec), micros(p.Latency.P99))
			} else {
				row = append(row, "", "")
			}
		}
		table = append(table, append(row, fmt.Sprintf("%.2fx", r.Ratio)))
	}
	var b strings.Builder
	b.WriteString(AlignRows(table))
	for _, f := range failures {
		b.WriteString("failed: " + f + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("loadgen: writing table: %w", err)
	}
	return nil
}

// cpuPerMop formats CPU time per million operations in seconds.
func cpuPerMop(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", d.Seconds())
}

// micros formats a latency in microseconds.
func micros(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	switch {
	case us >= 100:
		return fmt.Sprintf("%.0f", us)
	case us >= 10:
		return fmt.Sprintf("%.1f", us)
	}
	return fmt.Sprintf("%.2f", us)
}

// si formats a rate with an SI prefix: 950, 12.3k, 1.52M.
func si(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// Workloads returns the cross product of the paper's key/value sizes named
// in sizes ("a".."d"), the get ratios and the distributions (false:
// uniform, true: Zipfian), each with keys keys, named like "a 95:5 zipf".
func Workloads(sizes []string, getRatios []float64, zipf []bool, keys int) ([]Workload, error) {
	var out []Workload
	for _, name := range sizes {
		found := false
		for _, s := range PaperSizes() {
			if s.Name != name {
				continue
			}
			found = true
			for _, g := range getRatios {
				for _, z := range zipf {
					out = append(out, Workload{
						Name:     fmt.Sprintf("%s %s %s", name, mixName(g), distName(z)),
						GetRatio: g, Zipf: z, KeySize: s.KeySize, ValueSize: s.ValueSize, Keys: keys,
					})
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("loadgen: unknown workload size %q (want a, b, c or d)", name)
		}
	}
	return out, nil
}
