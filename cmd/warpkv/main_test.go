package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCmd runs the command line and returns its exit status and outputs.
func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stdout  string // substring expected on stdout
		stderr  string // substring expected on stderr
		noError bool   // stderr must be empty
	}{
		{name: "no command", args: nil, code: 2, stderr: "usage: warpkv <command>"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{name: "help", args: []string{"help"}, code: 0, stdout: "commands:", noError: true},
		{name: "--help", args: []string{"--help"}, code: 0, stdout: "bench", noError: true},
		{name: "help bench", args: []string{"help", "bench"}, code: 0, stdout: "suites:", noError: true},
		{name: "help bench lists serve", args: []string{"help", "bench"}, code: 0, stdout: "  serve   ", noError: true},
		{name: "help lists every suite", args: []string{"help"}, code: 0, stdout: "limits|prim|index|mpt|btree|stm|art|serve", noError: true},
		{name: "help mpt", args: []string{"help", "mpt"}, code: 0, stdout: "usage: warpkv mpt prove", noError: true},
		{name: "help mpt flags", args: []string{"help", "mpt"}, code: 0, stdout: "-node-update", noError: true},
		{name: "mpt --help", args: []string{"mpt", "--help"}, code: 0, stderr: "usage: warpkv mpt root"},
		{name: "mpt -h", args: []string{"mpt", "-h"}, code: 0, stderr: "-secure"},
		{name: "serve bad port", args: []string{"serve", "-p", "99999"}, code: 2, stderr: "-p 99999: not a TCP port"},
		{name: "serve -n 0", args: []string{"serve", "-n", "0"}, code: 2, stderr: "-n 0: "},
		{name: "help serve", args: []string{"help", "serve"}, code: 0, stdout: "-device", noError: true},
		{name: "help help", args: []string{"help", "help"}, code: 0, stdout: "commands:", noError: true},
		{name: "help unknown", args: []string{"help", "nope"}, code: 2, stderr: `unknown command "nope"`},
		{name: "help three", args: []string{"help", "a", "b", "c"}, code: 2, stderr: "at most a command and a subcommand"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "warpkv      " + version, noError: true},
		{name: "version arg", args: []string{"version", "x"}, code: 2, stderr: "no arguments"},
		{name: "version -h", args: []string{"version", "-h"}, code: 0, stderr: "usage: warpkv version"},
		{name: "bad flag", args: []string{"devices", "--nope"}, code: 2, stderr: "flag provided but not defined"},
		{name: "devices", args: []string{"devices"}, code: 0, noError: true},
		{name: "serve arg", args: []string{"serve", "x"}, code: 2, stderr: "no arguments"},
		{name: "serve bad size", args: []string{"serve", "-I", "2g"}, code: 2, stderr: "out of range"},
		{name: "serve bad device", args: []string{"serve", "--device", "tpu", "-p", "0"}, code: 2, stderr: "--device: device option \"tpu\": want auto, cpu, gpu or gpu:N"},
		{name: "bench no suite", args: []string{"bench"}, code: 2, stderr: "missing suite name"},
		{name: "bench serve extra", args: []string{"bench", "serve", "x"}, code: 2, stderr: "loadgen flags go after --"},
		{name: "bench serve nothing to run", args: []string{"bench", "serve", "--warpkv", "/nonexistent/warpkv", "--memcached", "/nonexistent/memcached", "--engines", ""}, code: 1, stderr: "skipped memcached -t"},
		{name: "bench serve in a test binary", args: []string{"bench", "serve", "--memcached", "none", "--engines", "cpu"}, code: 2, stderr: "pass --warpkv"},
		{name: "bench serve overlapping cpus", args: []string{"bench", "serve", "--server-cpus", "0", "--load-cpus", "0-1"}, code: 2, stderr: "overlap"},
		{name: "bench serve bad cpus", args: []string{"bench", "serve", "--server-cpus", "3-1"}, code: 2, stderr: "bad CPU list"},
		{name: "bench unknown", args: []string{"bench", "nope"}, code: 2, stderr: `unknown suite "nope"`},
		{name: "bench extra", args: []string{"bench", "limits", "extra"}, code: 2, stderr: "unexpected arguments"},
		{name: "bench bad reps", args: []string{"bench", "limits", "--reps", "0"}, code: 2, stderr: "--reps"},
		{name: "bench bad device", args: []string{"bench", "limits", "--device", "tpu"}, code: 2, stderr: "--device: device option \"tpu\": want auto, cpu, gpu or gpu:N"},
		{name: "bench limits cpu", args: []string{"bench", "--device", "cpu", "limits", "--size", "65536", "--reps", "1", "--quiet"},
			code: 0, stdout: "memory copy, 1 thread (64 KiB", noError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errOut)
			}
			if tc.noError && errOut != "" {
				t.Errorf("unexpected stderr:\n%s", errOut)
			}
		})
	}
}

// TestDevicesSaysWhy checks that devices prints either a table or a
// sentence explaining why no GPU is usable.
func TestDevicesSaysWhy(t *testing.T) {
	_, out, _ := runCmd("devices")
	if !strings.HasPrefix(out, "ordinal") && !strings.HasPrefix(out, "No GPU is usable: ") {
		t.Errorf("devices output neither a table nor a reason:\n%s", out)
	}
}

func TestBenchJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limits.json")
	code, out, errOut := runCmd("bench", "limits", "--device=cpu", "--size=65536", "--reps=2", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "cpu: memory copy over 64 KiB") {
		t.Errorf("no progress line on stderr:\n%s", errOut)
	}
	var rep struct {
		Suite   string
		Reps    int
		Results []struct{ Op, Engine string }
	}
	readJSON(t, path, &rep)
	if rep.Suite != "limits" || rep.Reps != 2 || len(rep.Results) != 6 || rep.Results[0].Engine != "cpu" {
		t.Errorf("report %+v", rep)
	}
}

// readJSON decodes the JSON file at path into v and returns the file's
// bytes; a file it cannot read or decode fails the test.
func readJSON(t *testing.T, path string, v any) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}
