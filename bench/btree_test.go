package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestBTreeCases(t *testing.T) {
	var got []string
	for _, c := range BTreeCases(BTreePaperSize) {
		got = append(got, c.Name())
	}
	want := []string{
		"build 5M", "build 10M", "build 20M", "build 100M",
		"insert 2M uniform into 5M", "insert 5M uniform into 5M", "insert 10M uniform into 5M",
		"insert 2M skewed into 5M", "insert 5M skewed into 5M", "insert 10M skewed into 5M",
		"insert 2M uniform into 10M", "insert 5M uniform into 10M", "insert 10M uniform into 10M",
		"insert 2M skewed into 10M", "insert 5M skewed into 10M", "insert 10M skewed into 10M",
		"delete 2M from 10M",
		"insert 10M uniform into 100M", "lookup 10M in 100M, half absent",
		"ranges 1M x ~16 keys in 100M", "delete 10M from 100M",
	}
	if !slices.Equal(got, want) {
		t.Errorf("BTreeCases(100M):\n%q\nwant\n%q", got, want)
	}
	small := BTreeCases(BTreeMinSize)
	if small[0].Batch != 50 || small[3].Batch != BTreeMinSize {
		t.Errorf("BTreeCases(%d) builds: %v", BTreeMinSize, small[:4])
	}
	for i, c := range small {
		for _, d := range small[:i] {
			if c == d {
				t.Errorf("case %v listed twice", c)
			}
		}
	}
}

// TestBTreeSkewed checks the skewed batch's shape: at least 80% of the keys
// in one gap between adjacent tree keys, under 5% of order-1024 leaves
// touched, no key of the batch outside the chosen gaps.
func TestBTreeSkewed(t *testing.T) {
	in := NewBTreeInputs()
	defer in.Close()
	const tree, batch = 200_000, 100_000
	c := BTreeCase{Op: BTreeInsert, Tree: tree, Batch: batch, Skewed: true}
	d, err := in.Data(c)
	if err != nil {
		t.Fatal(err)
	}
	sk, _, err := in.Sorted(tree)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(sk) || len(sk) != tree {
		t.Fatal("Sorted: not sorted")
	}
	perGap := map[int]int{}
	for _, k := range d.Keys {
		j, found := slices.BinarySearch(sk, k)
		if found {
			t.Fatalf("skewed key %#x is a tree key", k)
		}
		perGap[j]++
	}
	most := 0
	for _, n := range perGap {
		most = max(most, n)
	}
	if most < batch*8/10 {
		t.Errorf("largest gap holds %d of %d keys, want >= 80%%", most, batch)
	}
	if leaves := tree / (1024 - 128); len(perGap)*20 >= leaves {
		t.Errorf("%d gaps touched, want under 5%% of %d leaves", len(perGap), leaves)
	}
	u, err := in.Data(BTreeCase{Op: BTreeInsert, Tree: tree, Batch: batch})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(u.Keys, d.Keys) || len(u.Probes) != BTreeProbes {
		t.Error("uniform batch equals the skewed one, or wrong probes")
	}
}

func TestRunBTree(t *testing.T) {
	if _, err := RunBTree(Options{Device: "cpu", Size: 10}); err == nil {
		t.Error("RunBTree with size 10: no error")
	}
	const size = 20_000
	rep, err := RunBTree(Options{Device: "cpu", Size: size, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	cases := BTreeCases(size)
	var want []string
	for _, c := range cases {
		want = append(want, c.Name())
	}
	var got []string
	phases := 0
	for _, r := range rep.Results {
		if r.Engine != "cpu" || r.Items <= 0 || r.Seconds <= 0 || r.OpsPerSec <= 0 {
			t.Errorf("%s on %s: %d items in %gs", r.Op, r.Engine, r.Items, r.Seconds)
		}
		if name, phase, ok := strings.Cut(r.Op, ": "); ok {
			phases++
			if !slices.Contains([]string{"sort", "work"}, phase) || r.RatioTo != "whole call" || r.Ratio < 1 {
				t.Errorf("phase row %q: ratio %g to %q", r.Op, r.Ratio, r.RatioTo)
			}
			if len(got) == 0 || got[len(got)-1] != name {
				t.Errorf("phase row %q not after its case", r.Op)
			}
			continue
		}
		got = append(got, r.Op)
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%q\nwant\n%q", got, want)
	}
	if phases == 0 {
		t.Error("no phase rows")
	}
	if !slices.ContainsFunc(rep.Engines, func(s string) bool { return strings.HasPrefix(s, "cpu: warpkv btree CPU engine") }) {
		t.Errorf("engines: %q", rep.Engines)
	}
	if !slices.ContainsFunc(rep.Notes, func(s string) bool { return strings.Contains(s, "skewed inserts") }) {
		t.Errorf("no note on the skewed inputs: %q", rep.Notes)
	}
	if _, ok := Lookup("btree"); !ok {
		t.Error("suite btree not registered")
	}
}

// wrongLen is an implementation whose answers are off by one key.
type wrongLen struct{ BTreeImpl }

func (w wrongLen) Name() string { return "wrong" }
func (w wrongLen) Len() int     { return w.BTreeImpl.Len() + 1 }

// TestRunBTreeCasesWrong checks that a wrong answer posts no row, leaves
// a note and fails the run, which still measures the other cases.
func TestRunBTreeCasesWrong(t *testing.T) {
	eng, err := OpenBTreeEngines("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	other, err := OpenBTreeEngines("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	rep := NewReport("btree", 1)
	cases := BTreeCases(BTreeMinSize)[:2]
	err = RunBTreeCases(rep, cases, []BTreeImpl{eng.Impls[0], wrongLen{other.Impls[0]}}, func(BTreeImpl) int { return 1 }, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "on wrong: ") {
		t.Errorf("error %v, want a wrong answer", err)
	}
	for _, r := range rep.Results {
		if r.Engine == "wrong" {
			t.Errorf("row of the wrong implementation: %s", r.Op)
		}
	}
	if n := len(rep.Notes); n != 2 || !strings.HasPrefix(rep.Notes[0], "FAILED") {
		t.Errorf("notes: %q", rep.Notes)
	}
}
