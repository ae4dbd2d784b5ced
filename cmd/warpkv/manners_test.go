package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/difftest"
)

// The tests in this file check issue 21's command-line manners on the
// built binary: help for every command and subcommand, usage errors with
// exit status 2 naming the flag and its range, numbers checked before
// anything is allocated, output files checked before a run, long input
// lines read or refused with their number.

// crashMark matches what a crash or a Go runtime failure prints.
var crashMark = regexp.MustCompile(`fatal error:|goroutine [0-9]+ \[|panic:|token too long`)

// runBinary runs the warpkv binary with args (stdin from in, if not nil)
// and returns its exit status and outputs; a Go runtime crash fails the
// test.
func runBinary(t *testing.T, in []byte, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(difftest.WarpkvBinary(t), args...)
	if in != nil {
		cmd.Stdin = bytes.NewReader(in)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("warpkv %s: %v", strings.Join(args, " "), err)
	}
	// A crash's marks; "goroutine N [" is a dump's header (a flag's help
	// may say "goroutine").
	if crash := crashMark.FindString(errOut.String()); crash != "" {
		t.Fatalf("warpkv %s: stderr has %q:\n%.2000s", strings.Join(args, " "), crash, errOut.String())
	}
	return code, out.String(), errOut.String()
}

// TestHelpEveryCommand checks that "warpkv help CMD" prints every
// command's usage and flags on stdout, and "warpkv help CMD SUBCMD" each
// subcommand's.
func TestHelpEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // on stdout
	}{
		{[]string{"help", "version"}, []string{"usage: warpkv version"}},
		{[]string{"help", "devices"}, []string{"usage: warpkv devices"}},
		{[]string{"help", "serve"}, []string{"usage: warpkv serve", "-m int", "-I string", "-device"}},
		{[]string{"help", "bench"}, []string{"usage: warpkv bench", "-size", "-engines", "suites:"}},
		{[]string{"help", "bench", "btree"}, []string{"usage: warpkv bench", "-engines"}},
		{[]string{"help", "bench", "serve"}, []string{"usage: warpkv bench serve", "-memcached"}},
		// issue 19's unpipelined cases, as its "Measure it" names them
		{[]string{"help", "bench", "serve"}, []string{"-unpipelined", "--pipeline 1", "-unpipelined-conns", `(default "64,512,4096")`,
			"100:0 and 95:5", "memaslap", "memcached first", "-p99-at", "(default 0.8)", "p50, p99 and p99.9"}},
		{[]string{"help", "serve"}, []string{"-U int", "-l addr", "-s path", "-a mask", "-c int", "(default 1024)", "idle_timeout", "(default 11211)"}},
		{[]string{"help", "loadgen"}, []string{"usage: warpkv loadgen", "-conns", "-multiget", "-mix"}},
		{[]string{"help", "mpt"}, []string{"usage: warpkv mpt root", "usage: warpkv mpt prove", "-secure"}},
		{[]string{"help", "mpt", "root"}, []string{"usage: warpkv mpt root", "-batch"}},
		{[]string{"help", "mpt", "prove"}, []string{"usage: warpkv mpt prove", "-engine"}},
		{[]string{"help", "stm"}, []string{"usage: warpkv stm bank", "-accounts", "-transactions", "-history"}},
		{[]string{"help", "stm", "bank"}, []string{"usage: warpkv stm bank", "-accounts", "-read-only"}},
		{[]string{"help", "stm", "run"}, []string{"usage: warpkv stm run", "-body", "-items", "-read-only"}},
		{[]string{"help", "art"}, []string{"usage: warpkv art run", "-batch", "-device", "range LO|* HI|* LIMIT", "0 or less means no limit"}},
		{[]string{"help", "art", "run"}, []string{"usage: warpkv art run", "-batch", "8 MiB"}},
		{[]string{"help", "help"}, []string{"commands:"}},
	} {
		code, out, errOut := runBinary(t, nil, tc.args...)
		for _, w := range tc.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("warpkv %s: exit %d, stdout lacks %q:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, w, out, errOut)
				break
			}
		}
	}
	// Every command in the list has help.
	for _, c := range commands() {
		if code, out, _ := runBinary(t, nil, "help", c.name); code != 0 || out == "" {
			t.Errorf("warpkv help %s: exit %d, stdout %q", c.name, code, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "stm", "nope"}, `unknown stm subcommand "nope" (want bank, run)`},
		{[]string{"help", "serve", "x"}, "serve has no subcommands"},
		{[]string{"help", "nope"}, `unknown command "nope"`},
	} {
		if code, _, errOut := runBinary(t, nil, tc.args...); code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("warpkv %s: exit %d, stderr %q, want exit 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

// TestUsageErrors checks, in every command, that a bad flag or a value out
// of range exits 2 with a message naming the flag and what it accepts,
// before anything runs (stdout stays empty).
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // on stderr
	}{
		// An unknown flag, in every command.
		{[]string{"version", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"devices", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"serve", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"bench", "limits", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"bench", "serve", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"loadgen", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"mpt", "root", "--nope", "-"}, "flag provided but not defined: -nope"},
		{[]string{"mpt", "prove", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"stm", "bank", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"art", "run", "--nope"}, "flag provided but not defined: -nope"},
		// A value out of range, naming the flag and the range.
		{[]string{"serve", "-p", "99999"}, "-p 99999: not a TCP port (want 0 to 65535)"},
		{[]string{"serve", "-m", "99999999"}, "-m 99999999: want 1 to 262144"},
		{[]string{"serve", "-m", "1"}, "-I 1m: higher than half the memory limit (-m 1: at most 512k)"},
		{[]string{"serve", "--device", "tpu"}, `--device: device option "tpu": want auto, cpu, gpu or gpu:N`},
		{[]string{"serve", "--batch-policy", "x"}, `--batch-policy "x": want load or fixed`},
		{[]string{"serve", "--gpu-search", "x"}, `--gpu-search "x": want persistent or staged`},
		{[]string{"serve", "--cpu-search", "x"}, `--cpu-search "x": want inline or batched`},
		{[]string{"serve", "--search-launch", "x"}, `--search-launch "x": want callers, concurrent or scheduler`},
		{[]string{"serve", "--loop-wait", "spin"}, `--loop-wait "spin": want park or block`},
		{[]string{"serve", "--loop-spin", "11ms"}, "--loop-spin 11ms: want 0 to 10ms"},
		{[]string{"serve", "--loop-io", "kqueue"}, `--loop-io "kqueue": want epoll, uring or uringpoll`},
		{[]string{"serve", "--loop-spin", "-1us"}, "--loop-spin -1µs: want 0 to 10ms"},
		{[]string{"serve", "--inline-updates", "gpu"}, `--inline-updates "gpu": want cpu, all or off`},
		{[]string{"serve", "--batch-interval", "-1s"}, "--batch-interval -1s: want 0"},
		{[]string{"bench", "limits", "--reps", "0"}, "--reps 0: want at least 1"},
		{[]string{"bench", "btree", "--size", "5"}, "--size 5: the btree suite wants 0 (its default) or at least 1000"},
		{[]string{"bench", "art", "--engines", "tpu"}, `--engines: engines "tpu": unknown engine "tpu" (want cpu, gpu)`},
		{[]string{"bench", "index", "--engines", "gpu"}, "--engines gpu: the index suite runs every engine the device option allows"},
		{[]string{"bench", "limits", "--device", "tpu"}, `--device: device option "tpu"`},
		{[]string{"bench", "index", "--size", "4000000000000"}, "--size 4000000000000: needs at least"},
		{[]string{"bench", "serve", "-m", "0"}, "-m 0: want 1 to 262144"},
		{[]string{"bench", "serve", "-t", "-1"}, "-t -1: want at least 0"},
		{[]string{"bench", "serve", "--engines", "tpu"}, `--engines: "tpu": want floor or a device option`},
		{[]string{"bench", "serve", "--engines", "gpu/x"}, `--engines: "gpu/x": want floor or a device option (cpu, gpu, gpu:N, auto), optionally with /persistent, /staged, /callers, /concurrent, /scheduler, /roundN`},
		{[]string{"bench", "serve", "--", "--conns", "0"}, "loadgen flags after --: --conns 0: want 1 to 10000"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--conns", "0"}, "--conns 0: want 1 to 10000"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--multiget", "0"}, "--multiget 0: want at least 1"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--mix", "50:60"}, `--mix "50:60": GET and SET percentages sum to 110, want 100`},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--mix", "95:5,-5:105"}, `--mix "-5:105": want GET:SET percentages from 0 to 100`},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--pipeline", "0"}, "--pipeline 0: want 1 to 65536"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--keys", "0"}, "--keys 0: want at least 1"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--seed", "0"}, "--seed 0: want at least 1"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--keys", "1000000000", "--workloads", "a"}, "--keys 1000000000: want 1 to 268435456 (workload a 95:5 uniform has 8-byte keys)"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--multiget", "10000", "--workloads", "d"}, "--multiget 10000: want 1 to 8128"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--duration", "0s"}, "--duration 0s: want a positive duration"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--protocol", "udp"}, `--protocol "udp": want text, binary or meta`},
		{[]string{"mpt", "root", "--batch", "0", "-"}, "--batch 0: want at least 1"},
		{[]string{"stm", "bank", "--accounts", "0"}, "--accounts 0: want at least 1"},
		{[]string{"stm", "bank", "--versions", "2000"}, "--versions 2000: want 0 (the engine's default, 8) to 1024"},
		{[]string{"art", "run", "--batch", "-1", "-"}, "--batch -1: want at least 0"},
		{[]string{"art", "run", "--device", "tpu", "-"}, `--device: device option "tpu"`},
	} {
		code, out, errOut := runBinary(t, nil, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("warpkv %s: exit %d, stdout %q, stderr %q; want exit 2, no output and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}

// TestDeviceFromTheEnvironment: a bad $WARPKV_DEVICE with no --device
// given is refused naming the variable, not a flag the caller did not
// pass; a --device given wins over it.
func TestDeviceFromTheEnvironment(t *testing.T) {
	t.Setenv("WARPKV_DEVICE", "bogus")
	const want = `WARPKV_DEVICE (--device not given): device option "bogus"`
	for _, args := range [][]string{
		{"stm", "bank", "--transactions", "1"},
		{"bench", "limits"},
		{"art", "run", "-"},
		{"btree", "run", "-"},
	} {
		code, out, errOut := runBinary(t, []byte{}, args...)
		if code != 2 || !strings.Contains(errOut, want) || out != "" {
			t.Errorf("WARPKV_DEVICE=bogus warpkv %s: exit %d, stdout %q, stderr %q; want exit 2, no output and %q", strings.Join(args, " "), code, out, errOut, want)
		}
	}
	if code, _, errOut := runBinary(t, nil, "stm", "bank", "--device", "cpu", "--transactions", "1", "--quiet"); code != 0 {
		t.Errorf("WARPKV_DEVICE=bogus warpkv stm bank --device cpu: exit %d, stderr %q; want 0", code, errOut)
	}
}

// TestSizesThatCannotFit checks the absurd sizes: each is refused
// before anything is allocated, saying how much memory it would need and
// how much there is, where it used to reach the Go runtime (an out of
// memory crash, a goroutine dump).
func TestSizesThatCannotFit(t *testing.T) {
	m, ok := availableMemory()
	if !ok {
		t.Skip("no /proc/meminfo")
	}
	for _, tc := range []struct {
		args []string
		need uint64 // what the check counts
	}{
		// The CPU store: 24 bytes an account, its version logs (bounded,
		// whatever --versions), 8 for the final balances.
		{[]string{"stm", "bank", "--device", "cpu", "--accounts", "2147483647"}, 64 << 30},
		{[]string{"stm", "bank", "--device", "cpu", "--accounts", "2147483647", "--versions", "1024"}, 64 << 30},
		{[]string{"bench", "index", "--size", "4000000000000"}, 32 << 40},
		{[]string{"bench", "btree", "--device", "cpu", "--size", "4000000000000"}, 145 << 40},
		{[]string{"bench", "limits", "--device", "cpu", "--size", "4000000000000"}, 7 << 40},
		{[]string{"bench", "limits", "--device", "cpu", "--size", "9223372036854775807"}, 1 << 62}, // a need past int64
		{[]string{"serve", "--device", "cpu", "-m", "262144", "-p", "0"}, 32 << 30},                // the index
	} {
		if m.bytes >= tc.need {
			t.Logf("%v: %s available (%s): it may fit", tc.args, bench.IEC(int64(m.bytes)), m.source)
			continue
		}
		code, out, errOut := runBinary(t, nil, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "needs at least ") || strings.Contains(errOut, "at least -") ||
			!strings.Contains(errOut, " is available (") {
			t.Errorf("warpkv %s: exit %d, stdout %q, stderr %q; want exit 2 saying the memory it needs and the memory available", strings.Join(tc.args, " "), code, out, errOut)
		}
	}
}

// TestFailsBeforeRunning checks the failures that must come before a long
// run: an output file that cannot be written, the GPU engine alone without
// a GPU, a missing input file.
func TestFailsBeforeRunning(t *testing.T) {
	type tc struct {
		args []string
		want string
	}
	cases := []tc{
		{[]string{"bench", "limits", "--json", "/nonexistent/x.json"}, "bench limits: --json: open /nonexistent/x.json: no such file or directory (nothing was run)"},
		{[]string{"bench", "btree", "--json", t.TempDir()}, "a directory, not a file (nothing was run)"},
		{[]string{"bench", "serve", "--json", "/nonexistent/x.json"}, "bench serve: --json: open /nonexistent/x.json"},
		{[]string{"loadgen", "--addr", "127.0.0.1:1", "--json", "/nonexistent/x.json"}, "loadgen: --json: open /nonexistent/x.json"},
		{[]string{"stm", "bank", "--history", "/nonexistent/h.jsonl"}, "stm bank: --history: open /nonexistent/h.jsonl"},
		{[]string{"art", "run", "/nonexistent"}, "warpkv: art: open /nonexistent: no such file or directory"},
		{[]string{"mpt", "root", "/nonexistent"}, "warpkv: mpt: open /nonexistent: no such file or directory"},
		{[]string{"bench", "btree", "--device", "cpu", "--engines", "gpu"}, "bench btree: --engines gpu: no usable GPU (device option cpu): nothing was run"},
	}
	if ok, _ := gpu.Available(); !ok {
		cases = append(cases,
			tc{[]string{"bench", "btree", "--engines", "gpu"}, "bench btree: --engines gpu: no usable GPU ("},
			tc{[]string{"bench", "art", "--engines", "gpu"}, "bench art: --engines gpu: no usable GPU ("})
	}
	for _, c := range cases {
		code, out, errOut := runBinary(t, nil, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("warpkv %s: exit %d, stdout %q, stderr %q; want exit 1, no output and %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
	if _, err := os.Stat("/nonexistent/x.json"); err == nil {
		t.Errorf("a check created /nonexistent/x.json")
	}
	// A writable --json passes the check and is left as it was: absent.
	path := filepath.Join(t.TempDir(), "out.json")
	if code, _, errOut := runBinary(t, nil, "loadgen", "--addr", "127.0.0.1:1", "--json", path, "--mix", "50:60"); code != 2 || !strings.Contains(errOut, "--mix") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("the output check left %s behind", path)
	}
}

// TestLongLines checks that art run and mpt root read lines of any length
// up to their stated limits (a key of art.MaxKeyLen bytes), and that they
// and btree run refuse a longer line with its number and the limit, not
// bufio.Scanner's "token too long".
func TestLongLines(t *testing.T) {
	longest := "0x" + strings.Repeat("ab", art.MaxKeyLen)
	in := fmt.Sprintf("put %s 7\nget %s\nrange 0x * 0\n", longest, longest)
	code, out, errOut := runBinary(t, []byte(in), "art", "run", "--device", "cpu", "-")
	want := fmt.Sprintf("%s 7\nrange 1\n%s 7\n", longest, longest)
	if code != 0 || out != want {
		t.Fatalf("keys of art.MaxKeyLen bytes: exit %d, stderr %q, stdout %d bytes, want %d", code, errOut, len(out), len(want))
	}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"get 0x01\nget " + longest + "ab\n", fmt.Sprintf("art: line 2: key of %d bytes: at most %d", art.MaxKeyLen+1, art.MaxKeyLen)},
		{"get 0x01\n# comment\nget 0x" + strings.Repeat("ab", 3*art.MaxKeyLen) + "\nget 0x01\n",
			fmt.Sprintf("art: line 3: line too long: longer than %d bytes (a key is at most art.MaxKeyLen = %d bytes, %d hex digits)", artMaxLine, art.MaxKeyLen, 2*art.MaxKeyLen)},
	} {
		code, out, errOut := runBinary(t, []byte(tc.in), "art", "run", "--device", "cpu", "-")
		if code != 1 || out != "0x01 -\n" || !strings.Contains(errOut, tc.want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, the first get's answer and %q", code, out, errOut, tc.want)
		}
	}
	// btree run: a line over its limit is refused by number, not with
	// bufio.Scanner's "token too long".
	code, out, errOut = runBinary(t, []byte("put 1 2\nget 1"+strings.Repeat(" ", btreeMaxLine)+"\nget 1\n"), "btree", "run", "--device", "cpu", "-")
	if wantErr := fmt.Sprintf("btree: line 2: line too long: longer than %d bytes", btreeMaxLine); code != 1 || out != "" || !strings.Contains(errOut, wantErr) {
		t.Errorf("btree run with a long line: exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errOut, wantErr)
	}
	// mpt root: a 1 MiB key reads; a line over 64 MiB is refused by number.
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	fmt.Fprintf(w, "%s 01\n", strings.Repeat("cd", 1<<20))
	w.WriteString(strings.Repeat("ab", mptMaxLine/2+1) + "\n")
	w.Flush()
	code, out, errOut = runBinary(t, b.Bytes(), "mpt", "root", "--quiet", "--engine", "parallel", "-")
	wantErr := fmt.Sprintf("line 2: line too long: longer than %d bytes", mptMaxLine)
	if code != 1 || out != "" || !strings.Contains(errOut, wantErr) {
		t.Errorf("mpt root with a line over %d bytes: exit %d, stdout %q, stderr %.300q; want exit 1 and %q", mptMaxLine, code, out, errOut, wantErr)
	}
	code, out, errOut = runBinary(t, b.Bytes()[:2<<20+4], "mpt", "root", "--quiet", "--engine", "parallel", "-")
	if code != 0 || !strings.HasPrefix(out, "0x") {
		t.Errorf("mpt root with a 1 MiB key: exit %d, stdout %q, stderr %.300q", code, out, errOut)
	}
}
