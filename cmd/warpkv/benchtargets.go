package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/warpkv/warpkv/loadgen"
)

// writeTargets prints issue 14's targets for every workload of the saved
// bench serve reports: the GPU engine ("warpkv gpu") against memcached
// (2x on multi-gets, 1.5x on single gets) and against the CPU engine
// ("warpkv cpu": 1.0x everywhere, 1.3x on the small items of workloads a
// and b), every server's p99 at the paced fraction of its peak (< 1 ms), and
// the GPU engine's CPU time per operation below the CPU engine's.
func writeTargets(w io.Writer, files []string) error {
	type cell = loadgen.Result
	type key struct {
		workload string
		multi    int
	}
	var order []key
	byKey := map[key]map[string]cell{}
	var hdr []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("bench serve --report: %w", err)
		}
		var rep serveReport
		if err := json.Unmarshal(b, &rep); err != nil {
			return fmt.Errorf("bench serve --report: %s: %w", f, err)
		}
		hdr = append(hdr, fmt.Sprintf("%s: %s, %s, servers on CPUs %s, load on %s", f, rep.Date, rep.GPU, rep.ServerCPUs, rep.LoadCPUs))
		var prov strings.Builder
		rep.Provenance.Print(&prov)
		for _, l := range strings.Split(strings.TrimSpace(prov.String()), "\n") {
			hdr = append(hdr, "  "+l)
		}
		for _, s := range rep.Servers {
			for _, r := range s.Rows {
				if r.Err != "" {
					continue
				}
				k := key{r.Workload, max(1, r.Result.MultiGet)}
				if byKey[k] == nil {
					byKey[k] = map[string]cell{}
					order = append(order, k)
				}
				byKey[k][serverRole(s.Name)] = r.Result
			}
		}
	}
	for _, h := range hdr {
		fmt.Fprintf(w, "# %s\n", h)
	}
	rows := [][]string{{"workload", "keys/get", "memcached", "gpu", "cpu", "gpu/mc", "target", "gpu/cpu", "target",
		"p99@paced mc/gpu/cpu µs", "<1ms", "cpu µs/op gpu/cpu", "gpu<cpu"}}
	met, total := 0, 0
	check := func(ok, known bool) string {
		if !known {
			return "-"
		}
		total++
		if ok {
			met++
			return "met"
		}
		return "NOT MET"
	}
	for _, k := range order {
		c := byKey[k]
		mc, hasMC := c["memcached"]
		g, hasG := c["gpu"]
		cp, hasC := c["cpu"]
		mcTarget := 1.5
		if k.multi > 1 {
			mcTarget = 2
		}
		cpuTarget := 1.0
		if strings.HasPrefix(k.workload, "a ") || strings.HasPrefix(k.workload, "b ") {
			cpuTarget = 1.3
		}
		ratio := func(a, b cell, ok bool) (float64, string) {
			if !ok || b.OpsPerSec <= 0 {
				return 0, "-"
			}
			x := a.OpsPerSec / b.OpsPerSec
			return x, fmt.Sprintf("%.2fx", x)
		}
		xmc, smc := ratio(g, mc, hasG && hasMC)
		xcpu, scpu := ratio(g, cp, hasG && hasC)
		var p99s []string
		p99ok, p99known := true, false
		for _, role := range []struct {
			r  cell
			ok bool
		}{{mc, hasMC}, {g, hasG}, {cp, hasC}} {
			if !role.ok || role.r.Paced == nil {
				p99s = append(p99s, "-")
				continue
			}
			p99known = true
			p := role.r.Paced.Latency.P99
			p99ok = p99ok && p < time.Millisecond
			p99s = append(p99s, usec(p))
		}
		cpuCell, cpuOK, cpuKnown := "-", false, false
		if hasG && hasC && g.ServerCPUPerMop > 0 && cp.ServerCPUPerMop > 0 {
			cpuKnown = true
			cpuOK = g.ServerCPUPerMop < cp.ServerCPUPerMop
			cpuCell = fmt.Sprintf("%.3f/%.3f", g.ServerCPUPerMop.Seconds(), cp.ServerCPUPerMop.Seconds())
		}
		rows = append(rows, []string{k.workload, fmt.Sprint(k.multi), rate(mc, hasMC), rate(g, hasG), rate(cp, hasC),
			smc, fmt.Sprintf(">=%.1fx %s", mcTarget, check(xmc >= mcTarget, hasG && hasMC)),
			scpu, fmt.Sprintf(">=%.1fx %s", cpuTarget, check(xcpu >= cpuTarget, hasG && hasC)),
			strings.Join(p99s, "/"), check(p99ok, p99known), cpuCell, check(cpuOK, cpuKnown)})
	}
	writeTable(w, rows)
	fmt.Fprintf(w, "\n%d of %d target checks met\n", met, total)
	return nil
}

// serverRole maps a bench serve server name to memcached, gpu, cpu or the
// name itself.
func serverRole(name string) string {
	switch {
	case strings.HasPrefix(name, "memcached"):
		return "memcached"
	case name == "warpkv gpu" || name == "warpkv auto":
		return "gpu"
	case name == "warpkv cpu":
		return "cpu"
	}
	return name
}

func rate(r loadgen.Result, ok bool) string {
	if !ok {
		return "-"
	}
	return siRate(r.OpsPerSec)
}
