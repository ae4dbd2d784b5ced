package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// exampleBody is the body the package documentation of stm explains.
const exampleBody = "../../stm/testdata/transfer.cu"

func TestSTMRunBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no body", nil, "--body FILE.cu is required"},
		{"transactions and duration", []string{"--body", "x.cu", "--transactions", "5", "--duration", "1s"}, "exclude each other"},
		{"zero items", []string{"--body", "x.cu", "--items", "0"}, "--items 0"},
		{"negative threads", []string{"--body", "x.cu", "--threads", "-1"}, "--threads -1"},
		{"throttle above 1", []string{"--body", "x.cu", "--throttle", "1.5"}, "--throttle 1.5"},
		{"too many chained passes", []string{"--body", "x.cu", "--chain", "9"}, "--chain 9: want at most 8 passes"},
		{"unknown contention mode", []string{"--body", "x.cu", "--contention", "Claims"}, `--contention "Claims": want default, off, check or claims`},
		{"unknown commit path", []string{"--body", "x.cu", "--commit", "Direct"}, `--commit "Direct": want auto, servers or direct`},
		{"percent above 100", []string{"--body", "x.cu", "--read-only", "101"}, "--read-only 101"},
		{"zero transactions", []string{"--body", "x.cu", "--transactions", "0"}, "--transactions 0"},
		{"zero duration", []string{"--body", "x.cu", "--duration", "0s"}, "--duration 0s"},
		{"bad param", []string{"--body", "x.cu", "--param", "-3"}, "--param"},
		{"too many params", append([]string{"--body", "x.cu"}, strings.Split(strings.Repeat("--param 1 ", 16), " ")[:32]...), "at most 15"},
		{"no read set", []string{"--body", "x.cu", "--max-reads", "0"}, "--max-reads 0"},
		{"history without check", []string{"--body", "x.cu", "--check=false", "--history", "h.jsonl"}, "--history needs --check"},
		{"cpu", []string{"--body", "x.cu", "--device", "cpu"}, "GPU engine only"},
		{"bad device", []string{"--body", "x.cu", "--device", "tpu"}, "--device"},
		{"an argument", []string{"--body", "x.cu", "extra"}, "no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(append([]string{"stm", "run"}, tc.args...)...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q (stdout %q); want exit 2 and %q", code, errOut, out, tc.want)
			}
		})
	}
	code, _, errOut := runCmd("stm", "run", "--body", filepath.Join(t.TempDir(), "missing.cu"))
	if code != 1 || !strings.Contains(errOut, "missing.cu") {
		t.Errorf("a missing body: exit %d, stderr %q", code, errOut)
	}
}

// TestSTMRunCompileError: a body that does not compile fails before the
// device is opened, with NVRTC's log naming the body's own line.
func TestSTMRunCompileError(t *testing.T) {
	gputest.NVRTC(t)
	body := filepath.Join(t.TempDir(), "broken.cu")
	src := "__device__ void stm_body(stm_tx* tx) {\n\tstm_begin(tx, false)\n}\n"
	if err := os.WriteFile(body, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd("stm", "run", "--body", body, "--transactions", "10")
	if code != 1 || !strings.Contains(errOut, "broken.cu(3): error") {
		t.Fatalf("exit %d, stderr %q; want exit 1 and the compile error at broken.cu(3)", code, errOut)
	}
}

// TestSTMRunWithoutNVRTC: where NVRTC cannot be loaded, stm run fails
// (exit 1, nothing on standard output) saying that a CUDA body needs NVRTC
// and the GPU engine, and why NVRTC did not load. (With NVRTC and without
// a GPU, TestSTMRunBinary checks the error.)
func TestSTMRunWithoutNVRTC(t *testing.T) {
	if _, _, err := gpu.NVRTCVersion(); err == nil {
		t.Skip("NVRTC loads here: TestSTMRunBinary runs the body")
	}
	bin := buildWarpkv(t)
	cmd := exec.Command(bin, "stm", "run", "--body", exampleBody, "--transactions", "10")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || stdout.Len() != 0 {
		t.Fatalf("exit %v, stdout %q; want exit 1 and no output", err, stdout.String())
	}
	for _, want := range []string{"compiled with NVRTC", "GPU engine only", "NVRTC cannot be loaded", gpu.EnvLibNVRTC, "libnvrtc"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
}

// TestSTMRunBinary runs the documented example body with the built binary:
// on a GPU, a checked run (opacity, serial replay, the history file) and a
// run of a duration without the check; without one, the body compiles and
// the run fails saying there is no GPU.
func TestSTMRunBinary(t *testing.T) {
	gputest.NVRTC(t)
	bin := buildWarpkv(t)
	base := []string{"stm", "run", "--body", exampleBody, "--items", "4096", "--init", "100", "--param", "100", "--latency"}
	if ok, _ := gpu.Available(); !ok {
		out, err := exec.Command(bin, append(base, "--transactions", "10")...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "no GPU is usable") {
			t.Fatalf("without a GPU: %v\n%s", err, out)
		}
		return
	}
	hist := filepath.Join(t.TempDir(), "history.jsonl")
	for _, tc := range []struct {
		name    string
		args    []string
		checked bool
	}{
		{"checked", []string{"--transactions", "20000", "--read-only", "50", "--history", hist}, true},
		{"duration, unchecked", []string{"--duration", "300ms", "--read-only", "90", "--check=false", "--threads", "8192"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append(base, tc.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			out := stdout.String()
			n := func(key string) uint64 {
				m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `: ([0-9]+)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("output lacks %q:\n%s", key, out)
				}
				v, _ := strconv.ParseUint(m[1], 10, 64)
				return v
			}
			if n("commits") == 0 || n("wrong (stm_check)") != 0 {
				t.Fatalf("output:\n%s", out)
			}
			n("aborts")
			n("given up (stm_abort)")
			checkLatencyLine(t, out, n("commits"), true)
			if tc.checked {
				if n("commits") != 20000 || !strings.Contains(out, "opacity: ok") || !strings.Contains(out, "serializable: ok") {
					t.Fatalf("output:\n%s", out)
				}
				data, err := os.ReadFile(hist)
				if err != nil {
					t.Fatal(err)
				}
				if lines := bytes.Count(data, []byte("\n")); lines != 20000 {
					t.Fatalf("history has %d lines, want 20000", lines)
				}
			} else if !strings.Contains(out, "opacity: not checked") {
				t.Fatalf("output:\n%s", out)
			}
			t.Logf("%s", strings.ReplaceAll(out, "\n", "; "))
		})
	}
}
