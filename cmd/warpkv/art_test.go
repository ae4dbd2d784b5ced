package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/gpu"
)

// randomARTFile returns n random operation lines over a small key space
// (keys that are prefixes of each other, the empty key, 0x00 and 0xff
// bytes, upper-case hex, and one key in eight long: 33 to 300 bytes that
// share long prefixes), in runs of one verb, with ranges open at either
// end and limits of 0 or less (no limit), and the output the model prints
// for them.
func randomARTFile(r *rand.Rand, n int) (string, string) {
	long := bytes.Repeat([]byte("warpkv long key "), 20)
	hexKey := func() string {
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = []byte{0, 1, 'a', 0xff}[r.IntN(4)]
		}
		if r.IntN(8) == 0 {
			b = append(append([]byte{}, long[:33+r.IntN(len(long)-33)]...), b...)
		}
		s := fmt.Sprintf("0x%x", b)
		if r.IntN(10) == 0 {
			s = "0x" + strings.ToUpper(s[2:])
		}
		return s
	}
	verbs := []string{"put", "put", "put", "upd", "del", "get", "get", "range", "prefix", "len"}
	return scriptFile(r, n, verbs, artScriptModel(), hexKey, func(verb string) string {
		switch verb {
		case "range":
			lo, hi := hexKey(), hexKey()
			if r.IntN(3) == 0 {
				hi = "*"
			}
			if r.IntN(6) == 0 {
				lo = "*"
			}
			return fmt.Sprintf("range %s %s %d", lo, hi, r.IntN(9)-2)
		case "prefix":
			return fmt.Sprintf("prefix %s %d", hexKey(), r.IntN(9)-2)
		}
		return "len"
	})
}

func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestARTRunExample checks an example file line by line.
func TestARTRunExample(t *testing.T) {
	in := `put 0x61 1
put 0x6162 2
put 0x 3
put 0x00ff 4
get 0x61
get 0x62
get 0x
range 0x * 10
range 0x61 0x6162 10
prefix 0x61 1
prefix 0x 0
prefix 0x61 0
len
upd 0x61 9
upd 0x7a 5
del 0x6162
del 0x6162
get 0x61
get 0x7a
get 0x6162
range 0x 0x62 5
len
`
	want := `0x61 1
0x62 -
0x 3
range 4
0x 3
0x00ff 4
0x61 1
0x6162 2
range 1
0x61 1
prefix 1
0x61 1
prefix 4
0x 3
0x00ff 4
0x61 1
0x6162 2
prefix 2
0x61 1
0x6162 2
4
0x61 9
0x7a -
0x6162 -
range 3
0x 3
0x00ff 4
0x61 9
3
`
	checkRunBatches(t, "art", writeTemp(t, "ops", in), want, "0", "1", "2")
}

// TestARTRunMatchesOneAtATime runs random operation files in batches of
// every size and compares the output with one-at-a-time application.
func TestARTRunMatchesOneAtATime(t *testing.T) {
	r := runRand(t, 7)
	for range 8 {
		in, want := randomARTFile(r, 600)
		checkRunBatches(t, "art", writeTemp(t, "ops", in), want, "0", "1", "3", "1000")
	}
}

func firstDiffLine(a, b string) int {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// TestARTRunBuiltBinary builds warpkv (or takes $WARPKV_BINARY where
// there is no Go toolchain) and runs "warpkv art run" on random files,
// from a file and from standard input, on the default device (the GPU
// engine where one is usable).
func TestARTRunBuiltBinary(t *testing.T) {
	r := runRand(t, 8)
	for trial := range 4 {
		in, want := randomARTFile(r, 2000)
		path := writeTemp(t, "ops", in)
		for _, args := range [][]string{{"art", "run", path}, {"art", "run", "--batch", "5", "-"}} {
			code, out, stderr := runBinary(t, []byte(in), args...)
			if code != 0 || out != want {
				t.Fatalf("trial %d, %v: exit %d, stderr %q; output differs at line %d", trial, args, code, stderr, firstDiffLine(out, want))
			}
		}
	}
	// A malformed line: the lines before it ran, nothing after it did.
	code, out, stderr := runBinary(t, []byte("put 0x01 5\nget 0x01\nput 0x02 x\nget 0x01\n"), "art", "run", "-")
	if code == 0 || out != "0x01 5\n" || !strings.Contains(stderr, "line 3") {
		t.Fatalf("malformed line: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestARTRunErrors checks malformed lines and flags.
func TestARTRunErrors(t *testing.T) {
	gpuCase := struct {
		code   int
		stdout string
		stderr string
	}{1, "", "no GPU is usable"}
	if ok, _ := gpu.Available(); ok {
		gpuCase.code, gpuCase.stdout, gpuCase.stderr = 0, "0x01 -\n", ""
	}
	checkRunErrors(t, "art", []runErrorCase{
		{"unknown verb", "put 0x01 1\nget 0x01\nfrob 0x01\nget 0x01\n", nil, 1, "0x01 1\n", `line 3: unknown operation "frob"`},
		{"no 0x", "get 01\n", nil, 1, "", "line 1: key \"01\": want hex with a 0x prefix"},
		{"odd hex", "get 0x1\n", nil, 1, "", "line 1: key \"0x1\""},
		{"bad value", "put 0x01 -1\n", nil, 1, "", "line 1: value \"-1\""},
		{"value too big", "put 0x01 18446744073709551616\n", nil, 1, "", "line 1: value"},
		{"missing value", "put 0x01\n", nil, 1, "", "line 1: put takes 2 argument(s), got 1"},
		{"extra field", "len 3\n", nil, 1, "", "line 1: len takes 0 argument(s), got 1"},
		{"bad limit", "range 0x * x\n", nil, 1, "", "line 1: limit \"x\""},
		{"star as prefix", "prefix * 1\n", nil, 1, "", "line 1: key \"*\""},
		{"no limit", "put 0x01 1\nput 0x02 2\nrange * * -1\nprefix 0x 0\n", nil, 0, "range 2\n0x01 1\n0x02 2\nprefix 2\n0x01 1\n0x02 2\n", ""},
		{"limit 0 is no limit", "put 0x01 1\nput 0x02 2\nrange 0x * 0\nprefix 0x 0\nrange 0x * 1\n", nil, 0,
			"range 2\n0x01 1\n0x02 2\nprefix 2\n0x01 1\n0x02 2\nrange 1\n0x01 1\n", ""},
		{"pending batch runs first", "put 0x01 1\nput 0x02 2\nlen\nlen\nput 0x03 3\nbad\n", nil, 1, "2\n2\n", "line 6"},
		{"largest value", "put 0x 18446744073709551615\nget 0x\n", nil, 0, "0x 18446744073709551615\n", ""},
		{"no file", "", []string{"art", "run"}, 2, "", "one FILE argument"},
		{"no verb", "", []string{"art"}, 2, "", "usage: warpkv art run"},
		{"help", "", []string{"help", "art"}, 0, "usage: warpkv art run", ""},
		{"bad batch", "", []string{"art", "run", "--batch", "-1", "x"}, 2, "", "--batch"},
		{"missing file", "", []string{"art", "run", "/nonexistent/ops"}, 1, "", "no such file"},
		{"bad device", "get 0x01\n", []string{"art", "run", "--device", "tpu"}, 2, "", `--device: device option "tpu"`},
		{"gpu device", "get 0x01\n", []string{"art", "run", "--device", "gpu"}, gpuCase.code, gpuCase.stdout, gpuCase.stderr},
	})
}

// TestBenchARTEngines runs `warpkv bench art` with --engines: the CPU
// engine alone at a small size prints its rows, and the GPU engine alone
// without a GPU is an error naming why.
func TestBenchARTEngines(t *testing.T) {
	code, out, errOut := runCmd("bench", "art", "--device", "cpu", "--engines", "cpu", "--size", "2000", "--reps", "1", "--quiet")
	if code != 0 || !strings.Contains(out, "lookup 2k, 16 B keys, in 2k") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = runCmd("bench", "art", "--device", "cpu", "--engines", "gpu", "--size", "2000", "--quiet")
	if code == 0 || !strings.Contains(errOut, "no usable GPU") {
		t.Fatalf("--engines gpu on the CPU: exit %d\n%s", code, errOut)
	}
}

// TestARTRunBatchBudget checks that with --batch 0 (the default) batches
// are bounded by the memory budget, not by the file: a budget of a few
// operations splits a run of puts into many batches, none over the budget,
// and the output is the same as one operation at a time.
func TestARTRunBatchBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	in, want := randomARTFile(r, 2000)
	tr, err := art.Open(art.Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	budget := 4 * (artOpBytes + 8)
	run := &artRunner{t: tr, w: w, budget: budget}
	most := 0
	run.onFlush = func(ops []artOp) {
		bytes := 0
		for _, op := range ops {
			bytes += artOpSize(op)
		}
		most = max(most, bytes)
	}
	if err := run.run(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if out.String() != want {
		t.Fatalf("output differs at line %d", firstDiffLine(out.String(), want))
	}
	if most > budget || run.batches < 2000/4/2 {
		t.Errorf("%d batches, the largest %d bytes; want batches of at most %d bytes (4 operations)", run.batches, most, budget)
	}
}

// checkRunBatches runs "warpkv TOOL run --device cpu --batch B FILE" for
// every B of batches and requires exit 0 and exactly want on standard
// output: the same answers whatever the batching (art run, btree run).
func checkRunBatches(t *testing.T, tool, path, want string, batches ...string) {
	t.Helper()
	for _, b := range batches {
		code, out, errOut := runCmd(tool, "run", "--device", "cpu", "--batch", b, path)
		if code != 0 || out != want {
			in, _ := os.ReadFile(path)
			t.Fatalf("%s run --batch %s: exit %d, stderr %q; output differs from want at line %d\ninput:\n%s\nstdout:\n%s\nwant:\n%s",
				tool, b, code, errOut, firstDiffLine(out, want), in, out, want)
		}
	}
}

// runErrorCase is a "warpkv TOOL run" call that checkRunErrors makes: the
// file in (none when empty) after args (nil: TOOL run --device cpu), and
// the exit code, standard output (its start, for the case named help) and
// a piece of standard error it must give.
type runErrorCase struct {
	name   string
	in     string
	args   []string
	code   int
	stdout string
	stderr string
}

// checkRunErrors runs every case of tool's run command in-process, one
// subtest each (art run, btree run).
func checkRunErrors(t *testing.T, tool string, cases []runErrorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.in != "" {
				if args == nil {
					args = []string{tool, "run", "--device", "cpu"}
				}
				args = append(args, writeTemp(t, "ops", tc.in))
			}
			code, out, errOut := runCmd(args...)
			sameOut := out == tc.stdout || (tc.name == "help" && strings.HasPrefix(out, tc.stdout))
			if code != tc.code || !sameOut || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q",
					code, out, errOut, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
