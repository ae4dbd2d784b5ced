package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/difftest"
)

// buildWarpkv returns the warpkv binary the tests run: built once with go
// build, or $WARPKV_BIN where there is no Go toolchain (the GPU machine's
// runner, .gpu/run-tests.sh, sets it to the packed .gpu/warpkv).
func buildWarpkv(t *testing.T) string { return difftest.WarpkvBinary(t) }

// historyLine is one line of --history as the issue defines it.
type historyLine struct {
	TS     *uint64         `json:"ts"`
	RO     bool            `json:"ro"`
	Reads  [][2]uint64     `json:"reads"`
	Writes [][2]uint64     `json:"writes"`
	Extra  json.RawMessage `json:"-"`
}

// checkBankHistory checks a --history file against the definition,
// independently of package stm: no two update transactions share a
// timestamp; applying the updates' writes in ascending timestamp order from
// the initial store (every account at initial), each update's reads equal
// the store just before it, and each read-only transaction's reads equal
// the store after all updates with a timestamp up to its snapshot. It
// returns the number of lines and the store at the end.
func checkBankHistory(t *testing.T, path string, accounts int, initial uint64) (int, []uint64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var updates, ros []historyLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	lines := 0
	for sc.Scan() {
		lines++
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("line %d is not a JSON object: %v", lines, err)
		}
		for k := range raw {
			if k != "ts" && k != "ro" && k != "reads" && k != "writes" {
				t.Fatalf("line %d has key %q outside the issue's format", lines, k)
			}
		}
		var h historyLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		if err := dec.Decode(&h); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		if h.TS == nil || raw["reads"] == nil {
			t.Fatalf("line %d lacks ts or reads: %s", lines, sc.Text())
		}
		if h.RO {
			if raw["writes"] != nil {
				t.Fatalf("read-only line %d has writes", lines)
			}
			ros = append(ros, h)
		} else {
			if raw["writes"] == nil {
				t.Fatalf("update line %d lacks writes", lines)
			}
			updates = append(updates, h)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(updates, func(i, j int) bool { return *updates[i].TS < *updates[j].TS })
	sort.SliceStable(ros, func(i, j int) bool { return *ros[i].TS < *ros[j].TS })
	store := make([]uint64, accounts)
	for i := range store {
		store[i] = initial
	}
	r := 0
	checkRO := func(upTo uint64) {
		for ; r < len(ros) && *ros[r].TS <= upTo; r++ {
			for _, rd := range ros[r].Reads {
				if rd[0] >= uint64(accounts) || store[rd[0]] != rd[1] {
					t.Fatalf("read-only transaction at snapshot %d read account %d = %d, the store after commits <= %d holds %d",
						*ros[r].TS, rd[0], rd[1], *ros[r].TS, store[rd[0]])
				}
			}
		}
	}
	for i, u := range updates {
		if i > 0 && *u.TS == *updates[i-1].TS {
			t.Fatalf("two update transactions share timestamp %d", *u.TS)
		}
		checkRO(*u.TS - 1)
		for _, rd := range u.Reads {
			if rd[0] >= uint64(accounts) || store[rd[0]] != rd[1] {
				t.Fatalf("update transaction %d read account %d = %d, the store just before it holds %d", *u.TS, rd[0], rd[1], store[rd[0]])
			}
		}
		for _, w := range u.Writes {
			if w[0] >= uint64(accounts) {
				t.Fatalf("update transaction %d wrote account %d of %d", *u.TS, w[0], accounts)
			}
			store[w[0]] = w[1]
		}
	}
	checkRO(^uint64(0))
	return lines, store
}

// stmOutput parses the lines "name: number ..." the command prints.
func stmOutput(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	re := regexp.MustCompile(`(?m)^([a-z/ -]+): ([0-9]+)`)
	for _, g := range re.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseUint(g[2], 10, 64)
		m[g[1]] = v
	}
	for _, k := range []string{"commits", "aborts", "commits/s", "final total", "wrong read-only totals"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("output lacks %q:\n%s", k, out)
		}
	}
	return m
}

// checkCommitLine checks stm bank's "commit:" line: none on the CPU
// engine (it has one commit path); on the GPU "commit: N servers" when
// --servers was given (CommitAuto then takes the servers), else "commit:
// direct commits" (the cases are below 95% read-only and write at most 16
// accounts).
func checkCommitLine(t *testing.T, out, dev string, servers bool) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^commit: (.*)$`).FindStringSubmatch(out)
	switch {
	case dev == "cpu" && line != nil:
		t.Fatalf("the CPU engine printed %q:\n%s", line[0], out)
	case dev == "cpu":
	case line == nil:
		t.Fatalf("output lacks a \"commit:\" line:\n%s", out)
	case servers && !regexp.MustCompile(`^[0-9]+ servers$`).MatchString(line[1]):
		t.Fatalf("with --servers: %q, want \"commit: N servers\"", line[0])
	case !servers && line[1] != "direct commits":
		t.Fatalf("by default: %q, want \"commit: direct commits\"", line[0])
	}
}

// checkLatencyLine checks the "commit latency: p50 A, p99 B, p99.9 C (N
// timed)" line of an stm command's output run with --latency: every
// commit timed, 0 < A <= B <= C; without it, "commit latency: not timed
// (--latency)".
func checkLatencyLine(t *testing.T, out string, commits uint64, timed bool) {
	t.Helper()
	if !timed {
		if !strings.Contains(out, "\ncommit latency: not timed (--latency)\n") {
			t.Fatalf("output without --latency lacks \"commit latency: not timed (--latency)\":\n%s", out)
		}
		return
	}
	m := regexp.MustCompile(`(?m)^commit latency: p50 (\S+), p99 (\S+), p99\.9 (\S+) \(([0-9]+) timed\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output lacks the commit latency line:\n%s", out)
	}
	var ds []time.Duration
	for _, f := range m[1:4] {
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			t.Fatalf("commit latency %q: %q is not a positive duration", m[0], f)
		}
		ds = append(ds, d)
	}
	if n, _ := strconv.ParseUint(m[4], 10, 64); n != commits || ds[0] > ds[1] || ds[1] > ds[2] {
		t.Fatalf("%q: want %d timed, p50 <= p99 <= p99.9", m[0], commits)
	}
}

// TestSTMBankBinary builds warpkv, runs "warpkv stm bank" with its real
// flags on every engine it can, and checks the output (the commit latency
// with --latency on every other case) and the history file with the
// checker above.
func TestSTMBankBinary(t *testing.T) {
	bin := buildWarpkv(t)
	devices := []string{"cpu"}
	if ok, _ := gpu.Available(); ok {
		devices = append(devices, "gpu")
	}
	for _, dev := range devices {
		for i, tc := range []struct {
			accounts int
			initial  uint64
			args     []string
		}{
			{50, 100, []string{"--transactions", "3000", "--read-only", "40"}},
			{64, 3, []string{"--transactions", "3000", "--read-only", "30", "--read-size", "8", "--rounds", "3", "--servers", "2", "--seed", "7"}},
			{16, 0, []string{"--transactions", "2000", "--read-only", "50", "--rounds", "2"}}, // balances wrap below 0
			{40, 10, []string{"--duration", "200ms", "--read-only", "20", "--read-size", "40"}},
			{2, 5, []string{"--transactions", "500", "--read-only", "20", "--servers", "4"}}, // 2 servers: at most one per account
		} {
			timed := i%2 == 0 // --latency on every other case
			if timed {
				tc.args = append(tc.args, "--latency")
			}
			name := fmt.Sprintf("%s %d accounts %s", dev, tc.accounts, strings.Join(tc.args, " "))
			t.Run(name, func(t *testing.T) {
				hist := filepath.Join(t.TempDir(), "history.jsonl")
				args := append([]string{"stm", "bank", "--device", dev, "--accounts", fmt.Sprint(tc.accounts),
					"--initial", fmt.Sprint(tc.initial), "--history", hist}, tc.args...)
				cmd := exec.Command(bin, args...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
				}
				out := stmOutput(t, stdout.String())
				want := uint64(tc.accounts) * tc.initial
				if out["final total"] != want || out["wrong read-only totals"] != 0 {
					t.Fatalf("final total %d (want %d), wrong totals %d:\n%s", out["final total"], want, out["wrong read-only totals"], stdout.String())
				}
				checkLatencyLine(t, stdout.String(), out["commits"], timed)
				checkCommitLine(t, stdout.String(), dev, slices.Contains(tc.args, "--servers"))
				lines, store := checkBankHistory(t, hist, tc.accounts, tc.initial)
				if uint64(lines) != out["commits"] {
					t.Fatalf("history has %d lines, the command reported %d commits", lines, out["commits"])
				}
				var sum uint64
				for _, v := range store {
					sum += v
				}
				if sum != want {
					t.Fatalf("replayed history ends with total %d, want %d", sum, want)
				}
				t.Logf("%s", strings.ReplaceAll(stdout.String(), "\n", "; "))
			})
		}
	}
}

func TestSTMBankBadOptions(t *testing.T) {
	gpuErr := "no GPU is usable"
	if ok, _ := gpu.Available(); ok {
		gpuErr = "" // a GPU exists: the option is fine
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"zero accounts", []string{"--accounts", "0"}, 2, "--accounts 0"},
		{"read size larger than the store", []string{"--accounts", "10", "--read-size", "11"}, 2, "--read-size 11 is larger than the store"},
		{"read size not a number", []string{"--read-size", "many"}, 2, "--read-size"},
		{"percent above 100", []string{"--read-only", "101"}, 2, "--read-only 101"},
		{"negative percent", []string{"--read-only", "-1"}, 2, "--read-only -1"},
		{"transactions and duration", []string{"--transactions", "5", "--duration", "1s"}, 2, "exclude each other"},
		{"zero transactions", []string{"--transactions", "0"}, 2, "--transactions 0"},
		{"zero rounds", []string{"--rounds", "0"}, 2, "--rounds 0"},
		{"negative servers", []string{"--servers", "-1"}, 2, "--servers -1"},
		{"throttle of 1", []string{"--throttle", "1"}, 2, "--throttle 1: want an abort rate under 1"},
		{"too many chained passes", []string{"--chain", "9"}, 2, "--chain 9: want at most 8 passes"},
		{"unknown contention mode", []string{"--contention", "locks"}, 2, `--contention "locks": want default, off, check or claims`},
		{"unknown commit path", []string{"--commit", "lazy"}, 2, `--commit "lazy": want auto, servers or direct`},
		{"direct against servers", []string{"--direct", "--commit", "servers"}, 2, "--direct and --commit servers exclude each other"},
		{"bad device", []string{"--device", "tpu"}, 2, "--device"},
		{"bad duration", []string{"--duration", "soon"}, 2, "duration"},
		{"single account transfers", []string{"--accounts", "1", "--read-only", "50"}, 2, "--accounts 1: transfers need at least 2 accounts"},
		{"single account blocks", []string{"--read-size", "1"}, 2, "--read-size 1: transfers stay inside a block and need blocks of at least 2 accounts"},
		{"too many rounds", []string{"--rounds", "70000"}, 2, "--rounds 70000: want 1 to 65536"},
		{"history in a missing directory", []string{"--transactions", "10", "--history", "/nonexistent/dir/h.jsonl"}, 1, "--history"},
		{"no verb", nil, 2, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"stm", "bank", "--device", "cpu"}
			if tc.args == nil {
				args = []string{"stm"}
			} else if tc.name == "bad device" {
				args = []string{"stm", "bank"}
			}
			code, out, errOut := runCmd(append(args, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q (stdout %q); want exit %d and %q", code, errOut, out, tc.code, tc.want)
			}
		})
	}
	if gpuErr != "" {
		code, _, errOut := runCmd("stm", "bank", "--device", "gpu", "--transactions", "10")
		if code != 1 || !strings.Contains(errOut, gpuErr) {
			t.Errorf("--device gpu without a GPU: exit %d, stderr %q", code, errOut)
		}
		// Nothing ran: a --history file that was there is left as it
		// was, and none is created (it used to be truncated, or left
		// empty, before the engine was opened).
		dir := t.TempDir()
		old, fresh := filepath.Join(dir, "old.jsonl"), filepath.Join(dir, "new.jsonl")
		if err := os.WriteFile(old, []byte("kept\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{old, fresh} {
			if code, _, errOut := runCmd("stm", "bank", "--device", "gpu", "--transactions", "10", "--history", h); code != 1 {
				t.Errorf("--device gpu --history %s without a GPU: exit %d, stderr %q", h, code, errOut)
			}
		}
		if b, err := os.ReadFile(old); err != nil || string(b) != "kept\n" {
			t.Errorf("--history of a run that could not start: the file holds %q (%v), want it as it was", b, err)
		}
		if _, err := os.Stat(fresh); !os.IsNotExist(err) {
			t.Errorf("--history of a run that could not start: %s exists (%v), want no file", fresh, err)
		}
	}
}

// TestSTMBankCPUMemory: on the CPU engine, which keeps no commit log,
// --servers and --log-size cost no memory, and an account costs the
// store's 24 bytes (plus its version logs, bounded whatever --versions)
// and 8 for the final balances, so neither of these small stores is
// refused for memory (each was: 36 GiB for the logs of 64 servers of 2^24
// entries, 16 KiB an account at 1024 versions).
func TestSTMBankCPUMemory(t *testing.T) {
	for _, args := range [][]string{
		{"--servers", "64", "--log-size", "16777216"},
		{"--accounts", "2000000", "--versions", "1024", "--read-size", "100"},
	} {
		a := append([]string{"stm", "bank", "--device", "cpu", "--quiet", "--transactions", "1000"}, args...)
		if code, out, errOut := runCmd(a...); code != 0 {
			t.Errorf("warpkv %s: exit %d, stdout %q, stderr %q; want exit 0", strings.Join(a, " "), code, out, errOut)
		}
	}
}

// TestSTMBankTotalMod: balances are uint64 and wrap, so the final total is
// a sum mod 2^64; where accounts x initial exceeds 2^64 the line says so.
func TestSTMBankTotalMod(t *testing.T) {
	code, out, errOut := runCmd("stm", "bank", "--device", "cpu", "--quiet", "--transactions", "100",
		"--accounts", "4", "--initial", "18446744073709551615")
	if code != 0 || !strings.Contains(out, "\nfinal total: 18446744073709551612 (mod 2^64: accounts x initial exceeds 2^64)\n") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the total mod 2^64, said so", code, out, errOut)
	}
	code, out, _ = runCmd("stm", "bank", "--device", "cpu", "--quiet", "--transactions", "100")
	if code != 0 || !strings.Contains(out, "\nfinal total: 102400\n") {
		t.Errorf("exit %d, stdout %q; want final total: 102400", code, out)
	}
}
