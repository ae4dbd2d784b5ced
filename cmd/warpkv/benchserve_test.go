package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"0-3", "0-3", false}, {"0,2,4-5,5", "0,2,4-5", false}, {" 7 , 1-2", "1-2,7", false},
		{"", "", true}, {"a", "", true}, {"3-1", "", true}, {"-1", "", true},
	} {
		got, err := parseCPUList(tc.in)
		if (err != nil) != tc.err || (err == nil && formatCPUList(got) != tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseMemaslap(t *testing.T) {
	out := "servers: x\nget proportion: get_prop=0.95\nRun time: 2.0s Ops: 255660 TPS: 127806 Net_rate: 14.8M/s\n"
	tps, ops, ok := parseMemaslap(out)
	if !ok || tps != 127806 || ops != 255660 {
		t.Errorf("parseMemaslap = %v, %v, %v", tps, ops, ok)
	}
	if _, _, ok := parseMemaslap("nothing"); ok {
		t.Error("parseMemaslap found a TPS in nothing")
	}
}

// TestBenchServeEndToEnd builds warpkv and runs bench serve with it as a
// user would (memcached if installed, the CPU engine, a paced run, the
// profile and, when installed, the memaslap cross-check), and checks the
// JSON report: each server ran in its own process on the server CPUs, its
// CPU time per million operations was measured, and the paced run did.
func TestBenchServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds warpkv and runs servers")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go toolchain to build warpkv: %v", err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "warpkv")
	build := exec.Command(goBin, "build", "-o", exe, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	serverCPUs := formatCPUList(cpus[:max(1, len(cpus)/2)])
	path := filepath.Join(dir, "serve.json")
	code, out, errOut := runCmd("bench", "serve", "--warpkv", exe, "--engines", "cpu", "--profile", "--p99-at", "0.5",
		"--server-cpus", serverCPUs, "--json", path, "--",
		"--workloads", "a", "--mix", "95:5", "--dist", "zipf", "--multiget", "4", "--keys", "5000",
		"--duration", "400ms", "--warmup", "100ms", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep serveReport
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Commit == "" || len(rep.CommandLine) == 0 || rep.Device == "" || rep.Driver == "" || rep.CPUModel == "" || rep.CPUCores <= 0 {
		t.Errorf("report provenance %+v: want commit, command line, device, driver and CPU", rep.Provenance)
	}
	code, rout, rerr := runCmd("bench", "serve", "--report", path)
	if code != 0 || !strings.Contains(rout, "commit:  "+rep.Commit) || !strings.Contains(rout, "device:  ") {
		t.Errorf("bench serve --report: exit %d, no provenance:\n%s%s", code, rout, rerr)
	}
	want := []string{"warpkv cpu"}
	if _, err := exec.LookPath("memcached"); err == nil {
		want = append([]string{"memcached -t " + strconv.Itoa(max(1, len(cpus)/2))}, want...)
	}
	var names []string
	for _, s := range rep.Servers {
		names = append(names, s.Name)
		if s.Err != "" {
			t.Errorf("%s: %s", s.Name, s.Err)
		}
		if s.Affinity != serverCPUs {
			t.Errorf("%s ran on CPUs %q, want %q", s.Name, s.Affinity, serverCPUs)
		}
		if len(s.Rows) != 1 || s.Rows[0].Err != "" {
			t.Fatalf("%s rows: %+v", s.Name, s.Rows)
		}
		r := s.Rows[0].Result
		if r.OpsPerSec <= 0 || r.ServerCPUPerMop <= 0 || r.Paced == nil || r.Paced.OpsPerSec <= 0 {
			t.Errorf("%s: %.0f ops/s, %v cpu per Mop, paced %+v: want all measured", s.Name, r.OpsPerSec, r.ServerCPUPerMop, r.Paced)
		}
		if strings.HasPrefix(s.Name, "warpkv") && r.ServerStats["ops"] <= 0 {
			t.Errorf("%s: no profile counts in %v", s.Name, r.ServerStats)
		}
		if s.TotalCPU < r.ServerCPU || s.TotalCPU <= 0 {
			t.Errorf("%s: whole-run CPU %v below the window's %v", s.Name, s.TotalCPU, r.ServerCPU)
		}
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("servers %v, want %v", names, want)
	}
	for _, s := range []string{"cpu s/Mop", "x cpu", "paced p99µs", "search_wait"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	if runtime.NumCPU() < 2 {
		t.Logf("one CPU: server and load shared it")
	}
}

// TestBenchServeEngineSpecs checks the serve flags each --engines spec of
// bench serve starts warpkv with, and that bench serve's flag check takes
// exactly the specs planServers understands.
func TestBenchServeEngineSpecs(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []string // flags after --device DEV
		bad  bool
	}{
		{spec: "cpu", want: nil},
		{spec: "cpu/block", want: []string{"--loop-wait", "block"}},
		{spec: "cpu/round1+block", want: []string{"--round-conns", "1", "--loop-wait", "block"}},
		{spec: "gpu/staged+block", want: []string{"--gpu-search", "staged", "--loop-wait", "block"}},
		{spec: "cpu/roundall", want: []string{"--round-conns", "1048576"}},
		{spec: "gpu/loops16", want: []string{"--loops", "16"}},
		{spec: "cpu/park", want: []string{"--loop-wait", "park"}},
		{spec: "gpu/scheduler+loops2+block", want: []string{"--search-launch", "scheduler", "--loops", "2", "--loop-wait", "block"}},
		{spec: "gpu/concurrent", want: []string{"--search-launch", "concurrent"}},
		{spec: "cpu/spin50", want: []string{"--loop-spin", "50us"}},
		{spec: "gpu/spin20+block", want: []string{"--loop-spin", "20us", "--loop-wait", "block"}},
		{spec: "cpu/uringpoll", want: []string{"--loop-io", "uringpoll"}},
		{spec: "gpu/uringpoll+round4", want: []string{"--loop-io", "uringpoll", "--round-conns", "4"}},
		{spec: "cpu/epoll", want: []string{"--loop-io", "epoll"}},
		{spec: "gpu/uring+park", want: []string{"--loop-io", "uring", "--loop-wait", "park"}},
		{spec: "cpu/spin0", bad: true},
		{spec: "cpu/spin20000", bad: true},
		{spec: "cpu/blocked", bad: true},
		{spec: "cpu/round3+block", bad: true},
		{spec: "cpu/loops0", bad: true},
		{spec: "cpu/loopsx", bad: true},
	} {
		err := checkBenchServe(64, 0, c.spec, 0, "", "", nil)
		if (err != nil) != c.bad {
			t.Errorf("%s: check error %v, want an error %v", c.spec, err, c.bad)
		}
		if c.bad {
			continue
		}
		sv := planServers("none", c.spec, "warpkv", 2, 64, 0, "", false)
		if len(sv) != 1 {
			t.Fatalf("%s: %d servers planned, want 1", c.spec, len(sv))
		}
		i := slices.Index(sv[0].Args, "--device")
		if i < 0 {
			t.Fatalf("%s: no --device in %v", c.spec, sv[0].Args)
		}
		if got := sv[0].Args[i+2:]; !slices.Equal(got, c.want) {
			t.Errorf("%s: serve flags %v after the device, want %v", c.spec, got, c.want)
		}
	}
}
