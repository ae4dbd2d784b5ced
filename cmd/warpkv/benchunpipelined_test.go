package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/difftest"
)

// TestBenchServeUnpipelined runs "bench serve --unpipelined" briefly with
// the built binary: memcached (when installed) and the CPU engine, one
// connection count, both mixes; every row is measured at full speed and
// paced (warpkv at memcached's pace when memcached ran), memaslap beside
// loadgen on 95:5 when installed, and the stage profile is printed.
func TestBenchServeUnpipelined(t *testing.T) {
	var rep unpipelinedReport
	_, out, _ := benchServeReport(t, "unpipelined.json", &rep, "--unpipelined", "--engines", "cpu", "--profile", "-m", "64",
		"--unpipelined-conns", "8", "--unpipelined-duration", "1s")
	_, mcErr := exec.LookPath("memcached")
	if mcErr != nil && os.Getenv(difftest.EnvRequireMemcached) == "1" {
		t.Fatalf("memcached required ($%s=1): the rows are measured against it: %v", difftest.EnvRequireMemcached, mcErr)
	}
	_, msErr := exec.LookPath("memcaslap")
	if msErr != nil && os.Getenv(difftest.EnvRequireTools) == "1" {
		// .ci/run installs it (Debian's libmemcached-tools): the memaslap
		// column of issue 19 must not go missing silently there.
		t.Fatalf("memcaslap required ($%s=1): %v", difftest.EnvRequireTools, msErr)
	}
	servers := map[string]int{}
	for _, r := range rep.Rows {
		servers[r.Server]++
		if r.Err != "" {
			t.Errorf("%s %d %s: %s", r.Server, r.Conns, r.Mix, r.Err)
		}
		if r.Conns != 8 || r.Peak.Pipeline != 1 || r.Peak.OpsPerSec <= 0 || r.Peak.ServerCPUPerMop <= 0 {
			t.Errorf("%s %s: conns %d, pipeline %d, %.0f ops/s, %v CPU per Mop: want 8 connections x 1, measured",
				r.Server, r.Mix, r.Conns, r.Peak.Pipeline, r.Peak.OpsPerSec, r.Peak.ServerCPUPerMop)
		}
		if (mcErr == nil || !strings.HasPrefix(r.Server, "warpkv")) && (r.Paced == nil || r.Paced.Rate <= 0) {
			t.Errorf("%s %s: no paced run", r.Server, r.Mix)
		}
		if msErr == nil && r.Mix == "95:5" && (r.Memslap == nil || r.Memslap.Err != "" || r.Memslap.OpsPerSec <= 0) {
			t.Errorf("%s: memaslap %+v", r.Server, r.Memslap)
		}
	}
	if servers["warpkv cpu"] != 2 || (mcErr == nil && len(servers) != 2) {
		t.Errorf("rows per server %v, want 2 each for warpkv cpu and memcached", servers)
	}
	if rep.Profiles["warpkv cpu"]["ops"] <= 0 || !strings.Contains(out, "stage profile of warpkv cpu") {
		t.Errorf("no stage profile:\n%s", out)
	}
	for _, s := range []string{"memaslap TPS", "paced ops/s", "p99.9us", "cpu us/op", "load busy"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
}
