package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/warpkv/warpkv/loadgen"
	"github.com/warpkv/warpkv/server"
)

// writeServeReport prints bench serve's tables: per workload every server's
// throughput, latency, CPU time per million operations and ratios to the
// first server; then the cross-check, warpkv's pipeline figures and, when
// profiled, the per-stage profile.
func writeServeReport(w io.Writer, rep *serveReport) {
	fmt.Fprintf(w, "\n# bench serve, %s, %s: %d CPUs, servers on CPUs %s (-t %d), load on CPUs %s; %s\n",
		rep.Date, rep.Host, rep.CPUs, rep.ServerCPUs, rep.Threads, rep.LoadCPUs, rep.GPU)
	if len(rep.LoadgenArgs) > 0 {
		fmt.Fprintf(w, "# loadgen %s\n", strings.Join(rep.LoadgenArgs, " "))
	}
	fmt.Fprintln(w, "# ops/s counts keys (a 10-key get is 10 ops); cpu s/Mop = server CPU seconds (its rusage) per million ops = µs per op;")
	fmt.Fprintln(w, "# ratios are to the first server; paced = the same load at a fixed fraction of that server's peak;")
	fmt.Fprintln(w, "# load busy = the load generator's CPU use over its CPUs (peak/paced run): near 100% it may be the bound")
	writeTable(w, serveRows(rep))
	if cc := crossRows(rep); len(cc) > 1 {
		fmt.Fprintln(w, "\n# cross-check: an independent load tool and loadgen with the same shape")
		writeTable(w, cc)
	}
	for _, s := range rep.Servers {
		if len(s.Pipeline) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n# %s pipeline (whole run): %s\n", s.Name, pipelineLine(s.Pipeline))
	}
	for _, s := range rep.Servers {
		if pr := profileRows(s); len(pr) > 1 {
			fmt.Fprintf(w, "\n# %s: µs per op in each stage (wall time summed over goroutines / ops; read includes waiting for the client, search_wait the batch)\n", s.Name)
			writeTable(w, pr)
		}
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
}

// serveRows builds the main table.
func serveRows(rep *serveReport) [][]string {
	out := [][]string{{"workload", "server", "ops/s", "p50µs", "p99µs", "p99.9µs", "cpu s/Mop", "x ops", "x cpu", "paced ops/s", "paced p99µs", "load busy", "errors"}}
	type cell struct {
		server string
		row    loadgen.Row
	}
	var order []string
	byWorkload := map[string][]cell{}
	for _, s := range rep.Servers {
		for _, r := range s.Rows {
			if _, ok := byWorkload[r.Workload]; !ok {
				order = append(order, r.Workload)
			}
			byWorkload[r.Workload] = append(byWorkload[r.Workload], cell{s.Name, r})
		}
	}
	for _, wl := range order {
		var base *loadgen.Result
		for i, c := range byWorkload[wl] {
			name := wl
			if i > 0 {
				name = ""
			}
			if c.row.Err != "" {
				out = append(out, []string{name, c.server, "failed: " + firstLine(c.row.Err), "", "", "", "", "", "", "", "", "", ""})
				continue
			}
			r := &c.row.Result
			if base == nil {
				base = r
			}
			xops, xcpu := "", ""
			if base.OpsPerSec > 0 {
				xops = fmt.Sprintf("%.2fx", r.OpsPerSec/base.OpsPerSec)
			}
			if base.ServerCPUPerMop > 0 && r.ServerCPUPerMop > 0 {
				xcpu = fmt.Sprintf("%.2fx", float64(r.ServerCPUPerMop)/float64(base.ServerCPUPerMop))
			}
			pops, pp99 := "", ""
			busy := fmt.Sprintf("%.0f%%", 100*r.LoadBusy)
			if p := r.Paced; p != nil {
				pops, pp99 = siRate(p.OpsPerSec), usec(p.Latency.P99)
				busy += fmt.Sprintf("/%.0f%%", 100*p.LoadBusy)
			}
			out = append(out, []string{name, c.server, siRate(r.OpsPerSec), usec(r.Latency.P50), usec(r.Latency.P99),
				usec(r.Latency.P999), secsPerMop(r.ServerCPUPerMop), xops, xcpu, pops, pp99, busy, fmt.Sprint(r.Errors)})
		}
	}
	return out
}

// crossRows builds the cross-check table.
func crossRows(rep *serveReport) [][]string {
	out := [][]string{{"server", "tool", "tool ops/s", "loadgen ops/s", "loadgen/tool", "tool cpu s/Mop", "loadgen cpu s/Mop", "shape"}}
	for _, s := range rep.Servers {
		cc := s.Crosscheck
		if cc == nil {
			continue
		}
		ratio := ""
		if cc.ToolOpsPerSec > 0 && cc.LoadgenOpsPerSec > 0 {
			ratio = fmt.Sprintf("%.2fx", cc.LoadgenOpsPerSec/cc.ToolOpsPerSec)
		}
		shape := cc.Shape
		if cc.Err != "" {
			shape += " (" + cc.Err + ")"
		}
		out = append(out, []string{s.Name, cc.Tool, siRate(cc.ToolOpsPerSec), siRate(cc.LoadgenOpsPerSec), ratio,
			secsPerMop(cc.ToolServerCPUPerMop), secsPerMop(cc.LoadgenServerCPUPerMop), shape})
	}
	return out
}

// pipelineKeys are the warpkv statistics bench serve prints after a run.
var pipelineKeys = []string{"index_search_batch_avg", "index_search_batch_max", "index_batch_latency_p50_us",
	"index_batch_latency_p99_us", "index_update_rounds", "index_update_latency_p50_us", "get_latency_p50_us",
	"get_latency_p99_us", "set_latency_p99_us", "pending_full_waits", "write_search_retries", "stale_reads", "index_drops"}

func pipelineLine(st map[string]float64) string {
	var parts []string
	for _, k := range pipelineKeys {
		if v, ok := st[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %g", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

// profileRows builds a warpkv server's stage table from its rows' stats
// deltas: per workload, µs per op of every stage, then the server's CPU
// time per op.
func profileRows(s serverResult) [][]string {
	stages := server.ProfileStages()
	head := append([]string{"workload"}, stages...)
	out := [][]string{append(head, "cpu µs/op")}
	for _, r := range s.Rows {
		st := r.Result.ServerStats
		ops := st["ops"]
		if len(st) == 0 || ops <= 0 {
			continue
		}
		row := []string{r.Workload}
		for _, name := range stages {
			row = append(row, fmt.Sprintf("%.2f", st[name+"_ns"]/ops/1e3))
		}
		out = append(out, append(row, fmt.Sprintf("%.2f", r.Result.ServerCPUPerMop.Seconds())))
	}
	return out
}

// writeTable writes rows aligned, the first two columns left-aligned
// (loadgen.AlignRows).
func writeTable(w io.Writer, rows [][]string) {
	io.WriteString(w, loadgen.AlignRows(rows))
}

func siRate(v float64) string {
	switch {
	case v <= 0:
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func usec(d time.Duration) string {
	us := float64(d) / 1e3
	switch {
	case d <= 0:
		return "-"
	case us >= 100:
		return fmt.Sprintf("%.0f", us)
	case us >= 10:
		return fmt.Sprintf("%.1f", us)
	}
	return fmt.Sprintf("%.2f", us)
}

func secsPerMop(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", d.Seconds())
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}
