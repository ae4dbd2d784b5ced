package peerbench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/bench"
)

// TestCheck parses command lines with the shared flags: valid ones pass
// and get --peer-reps from --reps, invalid ones are refused.
func TestCheck(t *testing.T) {
	cases := []struct {
		args     []string
		ok       bool
		peerReps int
	}{
		{nil, true, bench.DefaultReps},
		{[]string{"--reps", "3"}, true, 3},
		{[]string{"--reps", "3", "--peer-reps", "1"}, true, 1},
		{[]string{"--reps", "0"}, false, 0},
		{[]string{"--size", "-1"}, false, 0},
		{[]string{"--peer-reps", "-1"}, false, 0},
		{[]string{"--single-max", "-1"}, false, 0},
		{[]string{"extra"}, false, 0},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		f := Register(fs, Help{Peers: "a,b", PeerNames: "a, b"})
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if got := f.Check(fs); got != c.ok {
			t.Errorf("%q: Check %v, want %v", c.args, got, c.ok)
			continue
		}
		if c.ok && f.PeerReps != c.peerReps {
			t.Errorf("%q: peer reps %d, want %d", c.args, f.PeerReps, c.peerReps)
		}
		if c.ok && (f.Peers != "a,b" || f.Device != "auto" || f.SingleMax != DefaultSingleMax) {
			t.Errorf("%q: defaults %+v", c.args, *f)
		}
	}
}

// TestPrint prints a report with a summary and writes its JSON.
func TestPrint(t *testing.T) {
	rep := bench.NewReport("x-peers", 2)
	rep.Engines = []string{"cpu: an engine"}
	rep.Notes = []string{"a note"}
	rep.Results = []bench.Result{bench.NewResult("lookup 1k", "cpu", 1000, 0, 0.001)}
	rep.Summary, rep.SummaryTitle = rep.Results, "against the targets"
	rep.Finish()
	path := filepath.Join(t.TempDir(), "r.json")
	var out bytes.Buffer
	if err := Print(&out, rep, "median of 2 runs", path); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"cpu: an engine\n", "note: a note\n", "median of 2 runs\n\n", "lookup 1k", "\nagainst the targets\n\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), `"x-peers"`) {
		t.Errorf("JSON: %v %s", err, b)
	}
}
