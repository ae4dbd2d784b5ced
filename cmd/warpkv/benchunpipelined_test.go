package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	if testing.Short() {
		t.Skip("builds warpkv and runs servers")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go toolchain to build warpkv: %v", err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "warpkv")
	if out, err := exec.Command(goBin, "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "unpipelined.json")
	code, out, errOut := runCmd("bench", "serve", "--unpipelined", "--warpkv", exe, "--engines", "cpu", "--profile",
		"--server-cpus", formatCPUList(cpus[:max(1, len(cpus)/2)]), "-m", "64",
		"--unpipelined-conns", "8", "--unpipelined-duration", "1s", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep unpipelinedReport
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
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
