package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// randomBTreeFile returns n random operation lines over a small key space
// (0 to 40, the largest keys and a few large ones), in runs of one verb,
// with ranges open at either end, empty and reversed ranges, and limits of
// 0 or less (no limit), and the output the model prints for them.
func randomBTreeFile(r *rand.Rand, n int) (string, string) {
	key := func() string {
		switch r.IntN(10) {
		case 0:
			return strconv.FormatUint(math.MaxUint64-uint64(r.IntN(2)), 10)
		case 1:
			return strconv.FormatUint(1<<40+uint64(r.IntN(5)), 10)
		}
		return strconv.Itoa(r.IntN(41))
	}
	bound := func() string {
		if r.IntN(5) == 0 {
			return "*"
		}
		return key()
	}
	verbs := []string{"put", "put", "put", "upd", "del", "get", "get", "range", "range", "len"}
	return scriptFile(r, n, verbs, btreeScriptModel(), key, func(verb string) string {
		if verb == "range" {
			return fmt.Sprintf("range %s %s %d", bound(), bound(), r.IntN(9)-2)
		}
		return "len"
	})
}

// TestBTreeRunExample checks an example file line by line.
func TestBTreeRunExample(t *testing.T) {
	in := `put 5 50
put 3 30
put 18446744073709551615 1
put 0 7
get 3
get 4
range * * 0
range 3 5 10
range 5 3 10
range 3 3 10
range 0 1 -1
range 4 * 1
len
upd 3 31
upd 4 40
del 5
del 5
get 3
get 4
range 1 * 2
len
`
	want := `3 30
4 -
range 4
0 7
3 30
5 50
18446744073709551615 1
range 1
3 30
range 0
range 0
range 1
0 7
range 1
5 50
4
3 31
4 -
range 2
3 31
18446744073709551615 1
3
`
	checkRunBatches(t, "btree", writeTemp(t, "ops", in), want, "0", "1", "2")
}

// TestBTreeRunMatchesOneAtATime runs random operation files in batches of
// every size and compares the output with one-at-a-time application.
func TestBTreeRunMatchesOneAtATime(t *testing.T) {
	r := runRand(t, 9)
	for range 8 {
		in, want := randomBTreeFile(r, 600)
		checkRunBatches(t, "btree", writeTemp(t, "ops", in), want, "0", "1", "3", "1000")
	}
}

// runOnDevices runs the built binary's "TOOL run" on in with --device cpu
// and, where a GPU is usable (required under WARPKV_REQUIRE_GPU=1), with
// --device gpu, each from a file and in batches of 5 from standard input,
// and compares every output with the model's.
func runOnDevices(t *testing.T, tool, in, want string) {
	t.Helper()
	path := writeTemp(t, "ops", in)
	for _, dev := range testDevices(t) {
		for _, args := range [][]string{{tool, "run", "--device", dev, path}, {tool, "run", "--device", dev, "--batch", "5", "-"}} {
			code, out, stderr := runBinary(t, []byte(in), args...)
			if code != 0 || out != want {
				t.Fatalf("%v: exit %d, stderr %q; output differs from the model at line %d", args, code, stderr, firstDiffLine(out, want))
			}
		}
	}
}

// testDevices returns the --device values the built binary's run tests
// use: cpu and, where a GPU is usable, gpu; under WARPKV_REQUIRE_GPU=1 an
// unusable GPU fails the test.
func testDevices(t *testing.T) []string {
	t.Helper()
	devices := []string{"cpu"}
	if _, err := gputest.Open(); err == nil {
		devices = append(devices, "gpu")
	} else if gputest.Required() {
		t.Fatalf("GPU required (WARPKV_REQUIRE_GPU=1) but unusable: %v", err)
	}
	return devices
}

// TestRunBinaryOnDevices runs the built binary's "art run" and "btree run"
// on random files with ranges (and, for art, prefixes and long keys) on
// the CPU engine and, where usable, the GPU engine, against the models.
func TestRunBinaryOnDevices(t *testing.T) {
	r := runRand(t, 10)
	for trial := range 3 {
		in, want := randomBTreeFile(r, 3000)
		t.Run(fmt.Sprintf("btree/%d", trial), func(t *testing.T) { runOnDevices(t, "btree", in, want) })
		in, want = randomARTFile(r, 3000)
		t.Run(fmt.Sprintf("art/%d", trial), func(t *testing.T) { runOnDevices(t, "art", in, want) })
	}
}

// TestBTreeRunErrors checks malformed lines and flags.
func TestBTreeRunErrors(t *testing.T) {
	checkRunErrors(t, "btree", []runErrorCase{
		{"unknown verb", "put 1 1\nget 1\nfrob 1\nget 1\n", nil, 1, "1 1\n", `line 3: unknown operation "frob"`},
		{"no prefix", "prefix 1 1\n", nil, 1, "", `line 1: unknown operation "prefix"`},
		{"hex key", "get 0x01\n", nil, 1, "", `line 1: key "0x01" is not a decimal uint64`},
		{"negative key", "get -1\n", nil, 1, "", `line 1: key "-1"`},
		{"key too big", "get 18446744073709551616\n", nil, 1, "", "line 1: key"},
		{"bad value", "put 1 -1\n", nil, 1, "", `line 1: value "-1"`},
		{"plus value", "put 1 +1\n", nil, 1, "", `line 1: value "+1"`},
		{"missing value", "put 1\n", nil, 1, "", "line 1: put takes 2 argument(s), got 1"},
		{"extra field", "len 3\n", nil, 1, "", "line 1: len takes 0 argument(s), got 1"},
		{"bad limit", "range 1 * x\n", nil, 1, "", `line 1: limit "x"`},
		{"plus limit", "range 1 * +1\n", nil, 1, "", `line 1: limit "+1"`},
		{"limits past int64", "put 1 1\nrange * * 99999999999999999999\nrange * * -99999999999999999999\n", nil, 0, "range 1\n1 1\nrange 1\n1 1\n", ""},
		{"pending batch runs first", "put 1 1\nput 2 2\nlen\nlen\nput 3 3\nbad\n", nil, 1, "2\n2\n", "line 6"},
		{"largest key and value", "put 18446744073709551615 18446744073709551615\nget 18446744073709551615\nrange 18446744073709551614 * 0\n", nil, 0,
			"18446744073709551615 18446744073709551615\nrange 1\n18446744073709551615 18446744073709551615\n", ""},
		{"no file", "", []string{"btree", "run"}, 2, "", "one FILE argument"},
		{"no verb", "", []string{"btree"}, 2, "", "usage: warpkv btree run"},
		{"help", "", []string{"help", "btree"}, 0, "usage: warpkv btree run", ""},
		{"bad batch", "", []string{"btree", "run", "--batch", "-1", "x"}, 2, "", "--batch"},
		{"missing file", "", []string{"btree", "run", "/nonexistent/ops"}, 1, "", "no such file"},
		{"bad device", "get 1\n", []string{"btree", "run", "--device", "tpu"}, 2, "", `--device: device option "tpu"`},
	})
}

// mapTree is a btreeTree over a Go map whose Ranges take half-open bounds
// [lo, hi), as btree.Tree's.
type mapTree struct {
	m map[uint64]uint64
}

func (t *mapTree) Insert(keys, values []uint64) error {
	for i, k := range keys {
		t.m[k] = values[i]
	}
	return nil
}

func (t *mapTree) remove(keys []uint64) error {
	for _, k := range keys {
		delete(t.m, k)
	}
	return nil
}

func (t *mapTree) Lookup(keys, values []uint64, found []bool) error {
	for i, k := range keys {
		values[i], found[i] = t.m[k]
	}
	return nil
}

func (t *mapTree) Len() int { return len(t.m) }

func (t *mapTree) Ranges(los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error) {
	sorted := make([]uint64, 0, len(t.m))
	for k := range t.m {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	offsets = []int{0}
	for i := range los {
		n := 0
		for _, k := range sorted {
			in := k >= los[i] && k < his[i]
			if in && (limit <= 0 || n < limit) {
				keys, values = append(keys, k), append(values, t.m[k])
				n++
			}
		}
		offsets = append(offsets, len(keys))
	}
	return keys, values, offsets, nil
}

// TestBTreeRunOverAMap runs random files through btree run's runner over
// a Go map with half-open Ranges (mapTree), in batches of several sizes:
// the output is the model's, so the runner's range lines (their limits,
// the key MaxUint64 of "LO *") need nothing of the B+ tree but its API.
func TestBTreeRunOverAMap(t *testing.T) {
	r := runRand(t, 11)
	for trial := range 6 {
		in, want := randomBTreeFile(r, 800)
		for _, batch := range []int{0, 1, 4} {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			err := (&btreeRunner{t: &mapTree{m: map[uint64]uint64{}}, w: w}).run(strings.NewReader(in), batch)
			if err != nil || w.Flush() != nil || out.String() != want {
				t.Fatalf("trial %d, batch %d: %v; output differs at line %d", trial, batch, err, firstDiffLine(out.String(), want))
			}
		}
	}
}

// pairsTree is a mapTree that counts the pairs its Ranges calls return.
type pairsTree struct {
	mapTree
	pairs int
}

func (t *pairsTree) Ranges(los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error) {
	keys, values, offsets, err = t.mapTree.Ranges(los, his, limit)
	t.pairs += len(keys)
	return keys, values, offsets, err
}

// TestBTreeRunRangeLimitsPerQuery checks that a batch of range lines with
// small limits asks the tree for about the pairs they print, not every
// pair of their ranges, when another line of the batch has no limit (one
// limit for the batch, none, made such a file run out of memory where
// --batch 1 ran it in a few megabytes).
func TestBTreeRunRangeLimitsPerQuery(t *testing.T) {
	const keys, lines = 1000, 500
	var in strings.Builder
	for k := range keys {
		fmt.Fprintf(&in, "put %d %d\n", k, k)
	}
	in.WriteString("range 0 2 0\n")
	for i := range lines {
		fmt.Fprintf(&in, "range %d * %d\n", i, 1+i%3)
	}
	tr := &pairsTree{mapTree: mapTree{m: map[uint64]uint64{}}}
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	if err := (&btreeRunner{t: tr, w: w}).run(strings.NewReader(in.String()), 0); err != nil || w.Flush() != nil {
		t.Fatal(err)
	}
	if want := 2 + 2*3*lines; tr.pairs > want {
		t.Errorf("Ranges returned %d pairs for lines printing at most %d; want at most %d", tr.pairs, 2+3*lines, want)
	}
	if got := strings.Count(out.String(), "range "); got != lines+1 {
		t.Errorf("%d range answers, want %d", got, lines+1)
	}
}

// TestLimitGroups checks the groups of limitGroups: one for no limit
// (limits of 0 or less), one per power of two of the others, each
// asking its largest limit, every query in exactly one, in order.
func TestLimitGroups(t *testing.T) {
	limits := []int{0, 1, 3, -2, 4, 2, 5, 8, 9, 1, math.MaxInt32, 1 << 30}
	groups, calls := limitGroups(limits)
	seen := map[int]bool{}
	for g, idx := range groups {
		if !slices.IsSorted(idx) {
			t.Errorf("group %d: %v not in order", g, idx)
		}
		for _, i := range idx {
			if seen[i] {
				t.Errorf("query %d in two groups", i)
			}
			seen[i] = true
			l := limits[i]
			switch {
			case l <= 0 && calls[g] != 0:
				t.Errorf("query %d (limit %d) in a call with limit %d", i, l, calls[g])
			case l > 0 && (calls[g] < l || calls[g] > 2*l):
				t.Errorf("query %d (limit %d) in a call with limit %d, want [%d, %d]", i, l, calls[g], l, 2*l)
			}
		}
	}
	if len(seen) != len(limits) {
		t.Errorf("%d of %d queries grouped", len(seen), len(limits))
	}
	want := [][]int{{0, 3}, {1, 9}, {2, 4}, {5}, {6, 7}, {8}, {10}, {11}}
	if !slices.EqualFunc(groups, want, slices.Equal) {
		t.Errorf("groups %v, want %v", groups, want)
	}
}
