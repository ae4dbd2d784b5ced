package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1}, 2},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 9, 1, 9, 1}, 9},
	} {
		in := append([]float64(nil), tc.in...)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Fatalf("Median modified its input: %v -> %v", tc.in, in)
			}
		}
	}
}

func TestNewResult(t *testing.T) {
	for _, tc := range []struct {
		name         string
		items, bytes int64
		sec          float64
		ops, gbps    float64
	}{
		{"one second", 1000, 2e9, 1, 1000, 2},
		{"half second", 10, 1e9, 0.5, 20, 2},
		{"zero time", 10, 10, 0, 0, 0},
		{"negative time", 10, 10, -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewResult("op", "cpu", tc.items, tc.bytes, tc.sec)
			if r.OpsPerSec != tc.ops || r.GBps != tc.gbps {
				t.Errorf("got %v ops/s %v GB/s, want %v and %v", r.OpsPerSec, r.GBps, tc.ops, tc.gbps)
			}
			if !r.finite() {
				t.Error("result not finite")
			}
		})
	}
}

func TestRatios(t *testing.T) {
	r := NewResult("sort", "gpu", 100, 4e9, 1) // 4 GB/s, 100 ops/s
	for _, tc := range []struct {
		name  string
		got   Result
		ratio float64
		to    string
	}{
		{"bandwidth", r.VsBandwidth("gpu copy", 8), 0.5, "gpu copy"},
		{"no bandwidth", r.VsBandwidth("gpu copy", 0), 0, ""},
		{"peer", r.VsPeer("slices.Sort", NewResult("p", "cpu", 100, 0, 4)), 4, "slices.Sort"},
		{"peer without time", r.VsPeer("slices.Sort", NewResult("p", "cpu", 100, 0, 0)), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got.Ratio != tc.ratio || tc.got.RatioTo != tc.to {
				t.Errorf("got %v %q, want %v %q", tc.got.Ratio, tc.got.RatioTo, tc.ratio, tc.to)
			}
		})
	}
}

func TestSI(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "-"},
		{1, "1"},
		{999, "999"},
		{12.5, "12.5"},
		{1000, "1k"},
		{1500, "1.5k"},
		{1 << 24, "16.78M"},
		{1 << 27, "134.2M"},
		{2.147e9, "2.147G"},
		{3e12, "3T"},
		{5e18, "5000P"},
	} {
		if got := SI(tc.in); got != tc.want {
			t.Errorf("SI(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIEC(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1536, "1.5 KiB"},
		{256 << 20, "256 MiB"},
		{1 << 30, "1 GiB"},
		{4 << 30, "4 GiB"},
		{3 << 40, "3 TiB"},
	} {
		if got := IEC(tc.in); got != tc.want {
			t.Errorf("IEC(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPrintTable(t *testing.T) {
	results := []Result{
		NewResult("copy kernel", "gpu", 1<<26, 2<<30, 0.001).VsBandwidth("theoretical peak", 3350),
		NewResult("sort pairs u64/u32", "cpu", 1<<24, 3<<24, 0.5).VsPeer("slices.SortFunc", NewResult("p", "cpu", 1<<24, 0, 2)),
		NewResult("empty", "cpu", 0, 0, 0),
	}
	var b bytes.Buffer
	if err := PrintTable(&b, results); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"operation           engine   items   ops/s  GB/s  ratio",
		"copy kernel         gpu     67.11M  67.11G  2147  0.64x theoretical peak",
		"sort pairs u64/u32  cpu     16.78M  33.55M  0.10  4.00x slices.SortFunc",
		"empty               cpu          -       -     -  -",
		"",
	}, "\n")
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestPrintTableEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := PrintTable(&b, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "operation  engine  items  ops/s  GB/s  ratio\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rep := NewReport("limits", 3)
	rep.Engines = []string{"cpu engine: requested"}
	rep.add(NewResult("memory copy", "cpu", 10, 20, 0.5).VsBandwidth("x", 10))
	rep.Notes = []string{"a note"}
	rep.Finish()
	var b bytes.Buffer
	if err := WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"suite": "limits"`, `"ops_per_sec": 20`, `"gbps": 4e-8`, `"ratio_to": "x"`, `"reps": 3`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b.String())
		}
	}
	got, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Suite != rep.Suite || len(got.Results) != 1 || got.Results[0] != rep.Results[0] ||
		!got.Started.Equal(rep.Started) || got.Notes[0] != "a note" {
		t.Errorf("round trip: got %+v, want %+v", got, rep)
	}
}

func TestJSONRejectsNonFinite(t *testing.T) {
	rep := NewReport("x", 1)
	r := NewResult("bad", "cpu", 1, 1, 1)
	r.Ratio = math.Inf(1)
	rep.add(r)
	if err := WriteJSON(&bytes.Buffer{}, rep); err == nil {
		t.Fatal("WriteJSON accepted an infinite ratio")
	}
}

func TestSaveJSON(t *testing.T) {
	path := t.TempDir() + "/r.json"
	rep := NewReport("prim", 1)
	rep.add(NewResult("scan", "cpu", 1, 8, 1))
	if err := SaveJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	if err := SaveJSON(t.TempDir()+"/missing/dir/r.json", rep); err == nil {
		t.Error("SaveJSON into a missing directory succeeded")
	}
}
