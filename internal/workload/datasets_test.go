package workload

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

func TestGenerate(t *testing.T) {
	const n = 20000
	for _, d := range Datasets() {
		keys, values, err := Generate(d, n, 42)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := Generate(d, n, 42)
		other, _, _ := Generate(d, n, 43)
		if !slices.EqualFunc(keys, again, bytes.Equal) {
			t.Errorf("%s: not deterministic", d)
		}
		if slices.EqualFunc(keys, other, bytes.Equal) {
			t.Errorf("%s: seed ignored", d)
		}
		sorted := slices.SortedFunc(slices.Values(keys), bytes.Compare)
		if len(slices.CompactFunc(slices.Clone(sorted), bytes.Equal)) != n {
			t.Errorf("%s: duplicate keys", d)
		}
		for i := 1; i < len(sorted); i++ {
			if bytes.HasPrefix(sorted[i], sorted[i-1]) {
				t.Fatalf("%s: key %q is a prefix of %q", d, sorted[i-1], sorted[i])
			}
		}
		s := DatasetStats(keys, values, sorted)
		t.Logf("%s: %v", d, s)
		if want := float64(d.MeanValueBytes()); math.Abs(s.MeanValueBytes-want) > want*0.02 {
			t.Errorf("%s: mean value %.0f bytes, want about %.0f", d, s.MeanValueBytes, want)
		}
		switch d {
		case YCSB:
			if s.MeanKeyNibbles < 45 || s.MeanKeyNibbles > 49 {
				t.Errorf("ycsb: %.1f nibbles per key", s.MeanKeyNibbles)
			}
		case ETHT:
			if s.MeanKeyNibbles != 64 {
				t.Errorf("etht: %.1f nibbles per key", s.MeanKeyNibbles)
			}
		case Wiki:
			if s.SharedNibbles < 50 {
				t.Errorf("wiki: sorted neighbours share only %.1f nibbles", s.SharedNibbles)
			}
		}
	}
	if _, _, err := Generate("nope", 1, 1); err == nil {
		t.Error("unknown data set: no error")
	}
}

// TestSharedNibbles checks the clustering statistic's prefix length.
func TestSharedNibbles(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"ab", "ab", 4}, {"\x12\x34", "\x12\x35", 3}, {"\x12", "\x22", 0}, {"\x12", "\x13", 1}, {"a", "ab", 2},
	} {
		if got := sharedNibbles([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("sharedNibbles(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
