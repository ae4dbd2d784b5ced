package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warpkv/warpkv/loadgen"
)

// unpipelinedPlan is what "bench serve --unpipelined" measures: clients
// with one request in flight per connection (issue 19).
type unpipelinedPlan struct {
	Conns    []int    // connection counts
	Mixes    []string // GET:SET mixes
	Workload string   // loadgen workload (key and value sizes)
	Keys     int
	Duration time.Duration
	Warmup   time.Duration
	PaceAt   float64 // fraction of memcached's peak every server is paced at (0: none)
	Profile  bool    // a stage profile of warpkv at the first connection count, 100:0
	Driver   string  // loadgen --driver ("": loadgen's default)
}

// unpipelinedRow is one server's measurement of one (connections, mix).
type unpipelinedRow struct {
	Server  string
	Conns   int
	Mix     string
	Peak    loadgen.Result
	Paced   *loadgen.Result `json:",omitempty"`
	Memslap *memslapResult  `json:",omitempty"`
	Err     string          `json:",omitempty"`
}

// memslapResult is memaslap's measurement of one connection count.
type memslapResult struct {
	Command   []string
	OpsPerSec float64
	CPUPerMop time.Duration
	Err       string `json:",omitempty"`
}

// unpipelinedReport is everything "bench serve --unpipelined" measured.
type unpipelinedReport struct {
	Date, Host, ServerCPUs, LoadCPUs, GPU string
	Threads                               int
	Plan                                  unpipelinedPlan
	Rows                                  []unpipelinedRow
	Profiles                              map[string]map[string]float64 `json:",omitempty"`
	Notes                                 []string                      `json:",omitempty"`
}

// runUnpipelined measures every server with one request in flight per
// connection: for each connection count and mix, warpkv loadgen's peak
// throughput, latency and server CPU time per operation; then every
// server paced at PaceAt of memcached's peak for the same row (latency at
// equal offered load); then memaslap with the same connections (95:5, its
// own get:set proportion config). memcached runs first; each server is
// alone in its own process pinned to the server CPUs, the load on the
// load CPUs.
func runUnpipelined(ctx context.Context, e *env, servers []plannedServer, exe string, sCPUs, lCPUs []int, threads int,
	plan unpipelinedPlan, memaslap, tmp string) unpipelinedReport {
	rep := unpipelinedReport{Date: time.Now().UTC().Format(time.RFC3339), Host: hostName(), GPU: gpuSummary(),
		ServerCPUs: formatCPUList(sCPUs), LoadCPUs: formatCPUList(lCPUs), Threads: threads, Plan: plan,
		Profiles: map[string]map[string]float64{}}
	mcPeak := map[string]float64{} // "conns mix" -> memcached's ops/s
	for _, sv := range servers {
		if sv.Skipped != "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("skipped %s: %s", sv.Name, sv.Skipped))
			continue
		}
		if ctx.Err() != nil {
			break
		}
		rows, prof, err := unpipelinedServer(ctx, e, sv, exe, sCPUs, lCPUs, plan, mcPeak, memaslap, tmp)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v", sv.Name, err))
		}
		if prof != nil {
			rep.Profiles[sv.Name] = prof
		}
		for _, r := range rows {
			if sv.memcached() && r.Err == "" {
				mcPeak[fmt.Sprint(r.Conns, " ", r.Mix)] = r.Peak.OpsPerSec
			}
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	if memaslap == "" {
		rep.Notes = append(rep.Notes, "no memaslap column: --crosscheck none, or neither memcaslap nor memaslap is installed (Debian: libmemcached-tools)")
	}
	return rep
}

// unpipelinedServer starts one server and measures its rows.
func unpipelinedServer(ctx context.Context, e *env, sv plannedServer, exe string, sCPUs, lCPUs []int,
	plan unpipelinedPlan, mcPeak map[string]float64, memaslap, tmp string) ([]unpipelinedRow, map[string]float64, error) {
	port, err := freeTCPPort()
	if err != nil {
		return nil, nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := sv.args(port)
	logPath := filepath.Join(tmp, strings.NewReplacer(" ", "_", "/", "_").Replace(sv.Name)+"-unpipelined.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	defer logf.Close()
	cmd := exec.Command(sv.Path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := startPinned(cmd, sCPUs); err != nil {
		return nil, nil, fmt.Errorf("start: %w", err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stopProcess(cmd, exited)
	if err := waitListening(ctx, addr, exited, 120*time.Second); err != nil {
		return nil, nil, fmt.Errorf("%v; log: %s", err, tailFile(logPath, 1500))
	}
	fmt.Fprintf(e.stderr, "bench serve --unpipelined: %s on %s (pid %d)\n", sv.Name, addr, pid)
	var rows []unpipelinedRow
	preload := "once"
	for _, conns := range plan.Conns {
		for _, mix := range plan.Mixes {
			if ctx.Err() != nil {
				return rows, nil, ctx.Err()
			}
			row := unpipelinedRow{Server: sv.Name, Conns: conns, Mix: mix}
			peak, err := unpipelinedLoad(ctx, e, exe, addr, pid, lCPUs, plan, conns, mix, 0, preload, "", tmp)
			preload = "none" // every row loads the same keys and sizes
			row.Peak = peak
			if err != nil {
				row.Err = err.Error()
			}
			rate := mcPeak[fmt.Sprint(conns, " ", mix)] * plan.PaceAt
			if sv.memcached() {
				rate = peak.OpsPerSec * plan.PaceAt // memcached runs first: its own peak
			}
			if rate > 0 {
				if paced, err := unpipelinedLoad(ctx, e, exe, addr, pid, lCPUs, plan, conns, mix, rate, "none", "", tmp); err == nil {
					row.Paced = &paced
				} else if row.Err == "" {
					row.Err = "paced: " + err.Error()
				}
			}
			if memaslap != "" && mix == "95:5" {
				row.Memslap = runMemslap(ctx, memaslap, addr, pid, lCPUs, conns, plan, tmp)
			}
			rows = append(rows, row)
		}
	}
	var prof map[string]float64
	if plan.Profile && sv.Warpkv && len(plan.Conns) > 0 {
		if r, err := unpipelinedLoad(ctx, e, exe, addr, pid, lCPUs, plan, plan.Conns[0], "100:0", 0, "none", "profile", tmp); err == nil {
			prof = r.ServerStats
		}
	}
	return rows, prof, nil
}

// unpipelinedLoad runs warpkv loadgen with one request in flight per
// connection (rate: paced, 0: as fast as it goes; stats: a stats group to
// report the change of) and returns its one row.
func unpipelinedLoad(ctx context.Context, e *env, exe, addr string, pid int, lCPUs []int, plan unpipelinedPlan,
	conns int, mix string, rate float64, preload, stats, tmp string) (loadgen.Result, error) {
	jsonOut := filepath.Join(tmp, "unpipelined.json")
	os.Remove(jsonOut)
	la := []string{"loadgen", "--addr", addr, "--server-pid", strconv.Itoa(pid), "--workloads", plan.Workload,
		"--mix", mix, "--dist", "uniform", "--keys", strconv.Itoa(plan.Keys), "--conns", strconv.Itoa(conns),
		"--pipeline", "1", "--multiget", "1", "--duration", plan.Duration.String(), "--warmup", plan.Warmup.String(),
		"--preload", preload, "--json", jsonOut, "--quiet"}
	if rate > 0 {
		la = append(la, "--rate", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	if stats != "" {
		la = append(la, "--server-stats", stats)
	}
	if plan.Driver != "" {
		la = append(la, "--driver", plan.Driver)
	}
	var out bytes.Buffer
	err := runPinned(ctx, exe, la, lCPUs, &out, &out)
	var rows []loadgen.Row
	if b, rerr := os.ReadFile(jsonOut); rerr == nil && json.Unmarshal(b, &rows) == nil && len(rows) == 1 {
		if err != nil {
			err = fmt.Errorf("%v: %s", err, lastLines(out.String(), 3))
		}
		return rows[0].Result, err
	}
	if err == nil {
		err = fmt.Errorf("no result: %s", lastLines(out.String(), 3))
	}
	return loadgen.Result{}, fmt.Errorf("loadgen: %v", err)
}

// runMemslap runs memaslap for plan.Duration with conns connections (95:5
// get:set, the workload's key and value sizes) against addr.
func runMemslap(ctx context.Context, tool, addr string, pid int, lCPUs []int, conns int, plan unpipelinedPlan, tmp string) *memslapResult {
	ks, vs := workloadSizes(plan.Workload)
	cfg := filepath.Join(tmp, "memslap-unpipelined.cfg")
	os.WriteFile(cfg, []byte(fmt.Sprintf("key\n%d %d 1\nvalue\n%d %d 1\ncmd\n0 0.05\n1 0.95\n", ks, ks, vs, vs)), 0o644)
	threads := len(lCPUs)
	for conns%threads != 0 { // memaslap wants the connections a multiple of its threads
		threads--
	}
	args := []string{"-s", addr, "-F", cfg, "-t", fmt.Sprintf("%ds", max(1, int(plan.Duration.Seconds()))),
		"-T", strconv.Itoa(threads), "-c", strconv.Itoa(conns)}
	res := &memslapResult{Command: append([]string{filepath.Base(tool)}, args...)}
	var err error
	if res.OpsPerSec, res.CPUPerMop, err = runMemaslapTool(ctx, tool, args, pid, lCPUs); err != nil {
		res.Err = err.Error()
	}
	return res
}

// workloadSizes returns the key and value sizes of a Mega-KV workload.
func workloadSizes(w string) (key, value int) {
	switch w {
	case "a":
		return 8, 8
	case "c":
		return 32, 512
	case "d":
		return 128, 1024
	}
	return 16, 64
}

// benchUnpipelined is "bench serve --unpipelined": it plans the rows, runs
// them (every server at -c benchServeConns), prints the report and
// writes it as JSON to jsonPath when set.
func benchUnpipelined(ctx context.Context, e *env, servers []plannedServer, exe string, sCPUs, lCPUs []int, threads int,
	connsList string, dur time.Duration, paceAt float64, profile bool, driver, memaslap, tmp, jsonPath string) error {
	plan := unpipelinedPlan{Mixes: []string{"100:0", "95:5"}, Workload: "b", Keys: 100000, Duration: dur,
		Warmup: 500 * time.Millisecond, PaceAt: paceAt, Profile: profile, Driver: driver}
	for _, f := range strings.Split(connsList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return usagef("--unpipelined-conns %q: want a list of connection counts", connsList)
		}
		plan.Conns = append(plan.Conns, n)
	}
	rep := runUnpipelined(ctx, e, servers, exe, sCPUs, lCPUs, threads, plan, memaslap, tmp)
	writeUnpipelined(e.stdout, &rep)
	if jsonPath != "" {
		b, err := json.MarshalIndent(&rep, "", "  ")
		if err == nil {
			err = os.WriteFile(jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			return fmt.Errorf("bench serve: writing %s: %w", jsonPath, err)
		}
	}
	if len(rep.Rows) == 0 {
		return fmt.Errorf("bench serve --unpipelined: no server could be measured")
	}
	return ctx.Err()
}

// loadBoundBusy is the load generator's CPU use at which bench serve
// --unpipelined says a row is likely bounded by the load: on the H200 host
// the floor server's rows (bench floor) ran at 97-100%, memcached's at
// 86-99%.
const loadBoundBusy = 0.95

// loadBoundNote says how many peak rows ran with the load generator at
// loadBoundBusy or more, and, when no floor server ran, how to measure the
// ceiling the load leaves; "" when none did.
func loadBoundNote(rows []unpipelinedRow) string {
	n, floor := 0, false
	for _, r := range rows {
		floor = floor || strings.HasPrefix(r.Server, "floor")
		if r.Err == "" && r.Peak.LoadBusy >= loadBoundBusy {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	note := fmt.Sprintf("note: the load generator was %.0f%% busy or more in %d of %d rows: there the load, not the server, may set the figure", 100*loadBoundBusy, n, len(rows))
	if !floor {
		note += "; --engines floor,... adds the floor server (bench floor: no index, one read and one write a request), the ceiling this load leaves any server"
	}
	return note
}

// writeUnpipelined prints the report: per (connections, mix) every
// server's peak with its ratio to memcached, latency percentiles and CPU
// time per request; the paced latencies; memaslap's throughput; and the
// stage profiles.
func writeUnpipelined(w io.Writer, rep *unpipelinedReport) {
	fmt.Fprintf(w, "\nbench serve --unpipelined: %s, servers on CPUs %s (-t %d), load on CPUs %s; %s; workload %s, %d keys, %v per row\n",
		rep.Host, rep.ServerCPUs, rep.Threads, rep.LoadCPUs, rep.GPU, rep.Plan.Workload, rep.Plan.Keys, rep.Plan.Duration)
	mc := map[string]unpipelinedRow{}
	for _, r := range rep.Rows {
		if strings.HasPrefix(r.Server, "memcached") {
			mc[fmt.Sprint(r.Conns, " ", r.Mix)] = r
		}
	}
	ratio := func(v, base float64) string {
		if base <= 0 || v <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", v/base)
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/1e3) }
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conns\tmix\tserver\tops/s\tvs mc\tp50us\tp99us\tp99.9us\tcpu us/op\tload busy\tpaced ops/s\tp50us\tp99us\tp99.9us\tmemaslap TPS\tvs mc\tcpu us/op\t")
	for _, r := range rep.Rows {
		base := mc[fmt.Sprint(r.Conns, " ", r.Mix)]
		p := r.Peak
		line := []string{strconv.Itoa(r.Conns), r.Mix, r.Server}
		if r.Err != "" && p.OpsPerSec == 0 {
			line = append(line, "failed: "+r.Err)
			fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
			continue
		}
		line = append(line, fmt.Sprintf("%.0f", p.OpsPerSec), ratio(p.OpsPerSec, base.Peak.OpsPerSec),
			us(p.Latency.P50), us(p.Latency.P99), us(p.Latency.P999), fmt.Sprintf("%.2f", float64(p.ServerCPUPerMop)/1e9),
			fmt.Sprintf("%.0f%%", 100*p.LoadBusy))
		if q := r.Paced; q != nil {
			line = append(line, fmt.Sprintf("%.0f", q.OpsPerSec), us(q.Latency.P50), us(q.Latency.P99), us(q.Latency.P999))
		} else {
			line = append(line, "-", "-", "-", "-")
		}
		if m := r.Memslap; m != nil && m.Err == "" {
			var bm float64
			if base.Memslap != nil {
				bm = base.Memslap.OpsPerSec
			}
			line = append(line, fmt.Sprintf("%.0f", m.OpsPerSec), ratio(m.OpsPerSec, bm), fmt.Sprintf("%.2f", float64(m.CPUPerMop)/1e9))
		} else {
			line = append(line, "-", "-", "-")
		}
		fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w, "load busy: the load generator's CPU use over its CPUs in the peak run; near 100% the row may be bounded by the load, not the server")
	if note := loadBoundNote(rep.Rows); note != "" {
		fmt.Fprintln(w, note)
	}
	for name, st := range rep.Profiles {
		ops := st["ops"]
		if ops <= 0 {
			continue
		}
		fmt.Fprintf(w, "\nstage profile of %s, %d connections x 1 request, 100:0 (us per request; wall time of each stage over the ops it served, %.1f ops per round):\n",
			name, rep.Plan.Conns[0], ops/max(st["cache_count"], 1))
		var parts []string
		for _, s := range []string{"read", "parse", "cache", "render", "write", "hash", "search_wait", "items", "index_search"} {
			parts = append(parts, fmt.Sprintf("%s %.2f", s, st[s+"_ns"]/ops/1e3))
		}
		fmt.Fprintln(w, "  "+strings.Join(parts, ", "))
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
}
