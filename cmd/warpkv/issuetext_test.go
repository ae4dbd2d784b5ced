package main

// Checks of what issues 19, 22 and 23 fix in their text (a command line,
// a flag, an output, an error), each run against the built warpkv binary
// as a user runs it.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/difftest"
	"github.com/warpkv/warpkv/loadgen"
)

// TestOpFileRunsShareArtRunsErrors (issue 22): "warpkv btree run" has "the
// same errors with line numbers" as "warpkv art run": for the same mistake
// (the btree line with a decimal key where art's has a hex one) both exit
// with the same status and the same message but for the tool's name, after
// printing the same answers of the lines before it.
func TestOpFileRunsShareArtRunsErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name           string
		btree, art     []string // arguments after "TOOL run"; "@LINES" is a file of the lines below
		btLines, aLine string
	}{
		{name: "bad device", btree: []string{"--device", "tpu", "@LINES"}, art: []string{"--device", "tpu", "@LINES"}, btLines: "len\n", aLine: "len\n"},
		{name: "negative batch", btree: []string{"--batch", "-1", "@LINES"}, art: []string{"--batch", "-1", "@LINES"}, btLines: "len\n", aLine: "len\n"},
		{name: "no file", btree: []string{}, art: []string{}},
		{name: "two files", btree: []string{"a", "b"}, art: []string{"a", "b"}},
		{name: "unknown flag", btree: []string{"--limit", "3", "x"}, art: []string{"--limit", "3", "x"}},
		{name: "missing file", btree: []string{"/nonexistent/ops"}, art: []string{"/nonexistent/ops"}},
		{name: "missing value", btLines: "put 1 5\nget 1\nput 2\nget 1\n", aLine: "put 0x01 5\nget 0x01\nput 0x02\nget 0x01\n"},
		{name: "negative value", btLines: "put 1 -1\n", aLine: "put 0x01 -1\n"},
		{name: "value past uint64", btLines: "len\nput 1 18446744073709551616\n", aLine: "len\nput 0x01 18446744073709551616\n"},
		{name: "bad limit", btLines: "range * * x\n", aLine: "range * * x\n"},
		{name: "plus limit", btLines: "range * * +1\n", aLine: "range * * +1\n"},
		{name: "range arguments", btLines: "range * *\n", aLine: "range * *\n"},
		{name: "len argument", btLines: "# a comment\n\nlen 1\n", aLine: "# a comment\n\nlen 1\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := func(tool string, a []string, lines string) []string {
				if a == nil {
					a = []string{"--device", "cpu", "@LINES"}
				}
				out := []string{tool, "run"}
				for _, s := range a {
					if s == "@LINES" {
						s = file(tool+".ops", lines)
					}
					out = append(out, s)
				}
				return out
			}
			bCode, bOut, bErr := runBinary(t, nil, args("btree", c.btree, c.btLines)...)
			aCode, aOut, aErr := runBinary(t, nil, args("art", c.art, c.aLine)...)
			// The answers printed before the error: btree's keys are decimal, art's hex.
			aOut = strings.ReplaceAll(strings.ReplaceAll(aOut, "0x01", "1"), "0x02", "2")
			bErr = strings.ReplaceAll(strings.ReplaceAll(bErr, "btree", "TOOL"), dir+"/TOOL.ops", "FILE")
			aErr = strings.ReplaceAll(strings.ReplaceAll(aErr, "art", "TOOL"), dir+"/TOOL.ops", "FILE")
			// The usage printed above a flag's error lists each tool's own
			// lines: the error is the last line.
			bErr, aErr = lastLine(bErr), lastLine(aErr)
			if bCode != aCode || bOut != aOut || bErr != aErr {
				t.Errorf("btree run: exit %d, stdout %q, stderr %q\nart run:   exit %d, stdout %q, stderr %q",
					bCode, bOut, bErr, aCode, aOut, aErr)
			}
			if bCode == 0 || bErr == "" {
				t.Errorf("btree run: exit %d, stderr %q: want an error", bCode, bErr)
			}
			if c.btLines != "" && c.btree == nil && !strings.Contains(bErr, "line ") {
				t.Errorf("btree run: %q names no line", bErr)
			}
		})
	}
}

// lastLine is the last line of s, without its newline.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestBTreeRunNoPrefix (issue 22): btree run takes art run's lines but
// prefix: a prefix line is an error naming its line, after the lines
// before it ran; its help says so and lists the lines as art run's does.
func TestBTreeRunNoPrefix(t *testing.T) {
	code, out, errOut := runBinary(t, []byte("put 7 70\nget 7\nprefix 7 0\nget 7\n"), "btree", "run", "--device", "cpu", "-")
	if code != 1 || out != "7 70\n" || !strings.Contains(errOut, `btree: line 3: unknown operation "prefix"`) {
		t.Errorf("prefix line: exit %d, stdout %q, stderr %q; want exit 1, the first get's answer and line 3 named", code, out, errOut)
	}
	for _, tool := range []string{"btree", "art"} {
		code, out, _ := runBinary(t, nil, "help", tool, "run")
		for _, want := range []string{"usage: warpkv " + tool + " run [--device auto|cpu|gpu|gpu:N] [--batch N] FILE",
			"put KEY VALUE, upd KEY VALUE, del KEY, get KEY, range LO|* HI|* LIMIT (LO <= key < HI)",
			"a LIMIT of 0 or less means no limit"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("warpkv help %s run: exit %d, no %q in\n%s", tool, code, want, out)
			}
		}
		if strings.Contains(out, "prefix P LIMIT") != (tool == "art") {
			t.Errorf("warpkv help %s run: prefix lines listed: %v, want %v", tool, !(tool == "art"), tool == "art")
		}
	}
}

// TestOpFileRunsBatchSizesAgree (issue 22): "the output is exactly what
// applying the lines one at a time prints", whatever --batch and on both
// engines: the built binary with --batch 1, 7 and the default on random
// files with ranges (both open ends, limits of 0 or less), prefixes and
// long keys (art), on the CPU engine and, where one is usable (required
// under WARPKV_REQUIRE_GPU=1), the GPU engine.
func TestOpFileRunsBatchSizesAgree(t *testing.T) {
	devices := testDevices(t)
	r := runRand(t, 22)
	for trial := range 2 {
		for _, tool := range []string{"btree", "art"} {
			in, want := randomBTreeFile(r, 1500)
			if tool == "art" {
				in, want = randomARTFile(r, 1500)
			}
			path := writeTemp(t, "ops", in)
			for _, dev := range devices[:min(len(devices), 2-trial)] { // the GPU on the first trial
				for _, batch := range []string{"1", "7", "0"} {
					code, out, errOut := runBinary(t, nil, tool, "run", "--device", dev, "--batch", batch, path)
					if code != 0 || out != want {
						t.Fatalf("trial %d: %s run --device %s --batch %s: exit %d, stderr %q; output differs from one at a time at line %d",
							trial, tool, dev, batch, code, errOut, firstDiffLine(out, want))
					}
				}
			}
		}
	}
}

// TestHistoryCheckedBeforeRunning (issue 23, README "Command-line
// manners"): --history of stm run and stm bank is checked for writing
// before the run, and the error says nothing ran. stm run writes its
// history after the run, so without the check an unwritable path failed
// only after a whole run (or, without a GPU, was never reported).
func TestHistoryCheckedBeforeRunning(t *testing.T) {
	body := exampleBody
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stm", "run", "--body", body, "--history", "/nonexistent/h.jsonl"}, "stm run: --history: open /nonexistent/h.jsonl: no such file or directory (nothing was run)"},
		{[]string{"stm", "run", "--body", body, "--history", t.TempDir()}, "a directory, not a file (nothing was run)"},
		{[]string{"stm", "bank", "--device", "cpu", "--history", "/nonexistent/h.jsonl"}, "stm bank: --history: open /nonexistent/h.jsonl: no such file or directory (nothing was run)"},
	} {
		code, out, errOut := runBinary(t, nil, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("warpkv %s: exit %d, stdout %q, stderr %q; want exit 1, no output and %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}

// TestLoadgenServerPIDChecked (issue 19): loadgen --server-pid reports the
// server's CPU time per request; a PID with no process on this machine is
// an error before anything runs (it used to fail every workload, each
// after its preload and warm-up).
func TestLoadgenServerPIDChecked(t *testing.T) {
	pid := fmt.Sprint(1<<31 - 1) // above the kernel's pid_max (at most 2^22)
	code, out, errOut := runBinary(t, nil, "loadgen", "--addr", freeAddr(t), "--server-pid", pid, "--duration", "100ms")
	want := "loadgen: --server-pid " + pid + ": no process to measure on this machine"
	if code != 1 || out != "" || !strings.Contains(errOut, want) || !strings.Contains(errOut, "(nothing was run)") ||
		strings.Contains(errOut, "preload") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, no output and %q ... (nothing was run)", code, out, errOut, want)
	}
}

// TestLoadgenServerPIDPerServer (issue 19): comparing two servers, each
// --server-pid measures the server at the --addr in its position, so
// every row's CPU time per request is its own server's (one --server-pid
// used to be the last one given, measured for every --addr); 0 leaves its
// server unmeasured. More --server-pid than --addr, or a negative one, is
// an error before anything runs.
func TestLoadgenServerPIDPerServer(t *testing.T) {
	a := difftest.Serve(t, "--device", "cpu", "-t", "1")
	b := difftest.Serve(t, "--device", "cpu", "-t", "1")
	pa, pb := fmt.Sprint(a.Cmd.Process.Pid), fmt.Sprint(b.Cmd.Process.Pid)
	out := filepath.Join(t.TempDir(), "rows.json")
	code, _, errOut := runBinary(t, nil, "loadgen", "--addr", a.Addr, "--addr", b.Addr, "--server-pid", pa, "--server-pid", pb,
		"--workloads", "a", "--mix", "100:0", "--dist", "uniform", "--keys", "1000", "--conns", "4", "--pipeline", "4",
		"--duration", "500ms", "--warmup", "0", "--json", out, "--quiet")
	if code != 0 {
		t.Fatalf("loadgen: exit %d: %s", code, errOut)
	}
	b2, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []loadgen.Row
	if err := json.Unmarshal(b2, &rows); err != nil || len(rows) != 2 {
		t.Fatalf("loadgen --json: %d rows, %v; want 2", len(rows), err)
	}
	// Both servers take the same load, so each row's CPU time per request
	// is within a small factor of the other's; a server idle while the
	// other is loaded uses next to none.
	ra, rb := rows[0].Result.ServerCPUPerMop, rows[1].Result.ServerCPUPerMop
	if ra <= 0 || rb <= 0 || ra > 4*rb || rb > 4*ra {
		t.Errorf("server CPU per million requests: %v at %s (pid %s), %v at %s (pid %s); want each its own server's, both loaded alike",
			ra, a.Addr, pa, rb, b.Addr, pb)
	}

	// --server-pid 0 holds the first server's place: only the second is
	// measured (0 meant no measurement before the flag was per server).
	code, _, errOut = runBinary(t, nil, "loadgen", "--addr", a.Addr, "--addr", b.Addr, "--server-pid", "0", "--server-pid", pb,
		"--workloads", "a", "--mix", "100:0", "--dist", "uniform", "--keys", "1000", "--conns", "4", "--pipeline", "4",
		"--duration", "300ms", "--warmup", "0", "--json", out, "--quiet")
	if code != 0 {
		t.Fatalf("loadgen --server-pid 0 --server-pid %s: exit %d: %s", pb, code, errOut)
	}
	b2, err = os.ReadFile(out)
	if err == nil {
		rows = nil
		err = json.Unmarshal(b2, &rows)
	}
	if err != nil || len(rows) != 2 {
		t.Fatalf("loadgen --json: %d rows, %v; want 2", len(rows), err)
	}
	if ra, rb := rows[0].Result.ServerCPU, rows[1].Result.ServerCPU; ra != 0 || rb <= 0 {
		t.Errorf("--server-pid 0 --server-pid %s: server CPU %v and %v; want none for the first server, some for the second", pb, ra, rb)
	}

	code, _, errOut = runBinary(t, nil, "loadgen", "--addr", a.Addr, "--server-pid", pa, "--server-pid", pb, "--duration", "100ms")
	if want := "2 --server-pid flags for 1 --addr flags"; code != 2 || !strings.Contains(errOut, want) {
		t.Errorf("two --server-pid for one --addr: exit %d, stderr %q; want exit 2 saying %q", code, errOut, want)
	}
	code, _, errOut = runBinary(t, nil, "loadgen", "--addr", a.Addr, "--server-pid", "-1", "--duration", "100ms")
	if want := `--server-pid "-1": want a process id (0: not measured)`; code != 2 || !strings.Contains(errOut, want) {
		t.Errorf("--server-pid -1: exit %d, stderr %q; want exit 2 saying %q", code, errOut, want)
	}
}
