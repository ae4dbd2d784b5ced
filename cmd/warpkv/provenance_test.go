package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/internal/difftest"
)

// TestBenchReportProvenance runs every bench suite with the built binary
// and --json at a small size, and checks that each report records the
// commit (the checkout's HEAD: the test runs inside it), the full command
// line, the device and driver, the CPU and the date, and that the text
// output prints them.
func TestBenchReportProvenance(t *testing.T) {
	bin := difftest.WarpkvBinary(t)
	head := ""
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		head = strings.TrimSpace(string(out))
	}
	dir := t.TempDir()
	for _, suite := range suiteNames() {
		if suite == "serve" { // TestBenchServeProvenance
			continue
		}
		size := "1000"
		if suite == "stm" {
			if testing.Short() {
				continue
			}
			size = "100"
		}
		t.Run(suite, func(t *testing.T) {
			path := filepath.Join(dir, suite+".json")
			args := []string{"bench", suite, "--device", "cpu", "--size", size, "--reps", "1", "--quiet", "--json", path}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), bench.EnvCommit+"=")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
			}
			var rep bench.Report
			b := readJSON(t, path, &rep)
			checkProvenance(t, rep.Provenance, append([]string{bin}, args...), head)
			for _, key := range []string{`"commit"`, `"command_line"`, `"device"`, `"driver"`, `"cpu_model"`, `"cpu_cores"`, `"date"`} {
				if !strings.Contains(string(b), key) {
					t.Errorf("report lacks %s", key)
				}
			}
			if !strings.Contains(string(out), "commit:  "+rep.Commit) || !strings.Contains(string(out), "command: "+bin+" bench "+suite) {
				t.Errorf("output does not print the provenance:\n%s", out)
			}
		})
	}
}

// checkProvenance checks a report's provenance against the command line
// that produced it and the checkout's HEAD ("" when git is missing).
func checkProvenance(t *testing.T, p bench.Provenance, cmdline []string, head string) {
	t.Helper()
	if head != "" && p.Commit != head {
		t.Errorf("commit %q (from %q), want HEAD %s", p.Commit, p.CommitFrom, head)
	}
	if p.Commit == "" {
		t.Error("no commit")
	}
	if !slices.Equal(p.CommandLine, cmdline) {
		t.Errorf("command line %q, want %q", p.CommandLine, cmdline)
	}
	if p.Device == "" || p.Driver == "" || p.CPUModel == "" || p.CPUCores <= 0 || p.Date.IsZero() {
		t.Errorf("device %q, driver %q, cpu %q x %d, date %v: want all", p.Device, p.Driver, p.CPUModel, p.CPUCores, p.Date)
	}
}

// TestBenchReportCommitOutsideCheckout runs a copy of the binary outside
// any checkout: its report names the commit of the COMMIT file beside it
// (as scripts/pack-gpu.sh writes), or $WARPKV_COMMIT when set, else
// "unknown".
func TestBenchReportCommitOutsideCheckout(t *testing.T) {
	src := difftest.WarpkvBinary(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "warpkv")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, env, want string
		modified              bool
	}{
		{"nothing", "", "", "unknown", false},
		{"file", "0123456789abcdef+modified\n", "", "0123456789abcdef", true},
		{"env wins", "0123456789abcdef\n", "fedcba", "fedcba", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == "" && stamped(t, bin) {
				t.Skip("the binary carries its build's commit, which comes before the file")
			}
			os.Remove(filepath.Join(dir, bench.CommitFile))
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(dir, bench.CommitFile), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, tc.name+".json")
			cmd := exec.Command(bin, "bench", "limits", "--device", "cpu", "--quiet", "--json", path)
			cmd.Dir = dir // not a checkout: git finds none
			cmd.Env = append(os.Environ(), bench.EnvCommit+"="+tc.env, "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var rep bench.Report
			readJSON(t, path, &rep)
			if rep.Commit != tc.want || rep.Modified != tc.modified {
				t.Errorf("commit %q modified %v (from %q), want %q %v", rep.Commit, rep.Modified, rep.CommitFrom, tc.want, tc.modified)
			}
		})
	}
}

// stamped reports whether the binary records its version control revision.
func stamped(t *testing.T, bin string) bool {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			return true
		}
	}
	return false
}
