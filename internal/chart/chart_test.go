package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// TestWriteSVG draws charts on linear and log axes, with missing values
// and targets, and checks that the SVG is well-formed and names every case
// and series; bad charts are refused.
func TestWriteSVG(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Chart
		err  bool
	}{
		{"linear", Chart{Title: "t", Groups: []string{"build", "lookup"},
			Series:  []Series{{"gpu", []float64{3e9, 1e9}}, {"peer", []float64{1e6, math.NaN()}}},
			Targets: []Target{{Group: 0, Series: 0, Value: 1.5e9}, {Group: 1, Series: -1, Value: 2e9}}}, false},
		{"log with a zero", Chart{Groups: []string{"a"}, Log: true, Series: []Series{{"x", []float64{0}}, {"y", []float64{10}}}}, false},
		{"no groups", Chart{Series: []Series{{"x", nil}}}, true},
		{"short series", Chart{Groups: []string{"a", "b"}, Series: []Series{{"x", []float64{1}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := tc.c.WriteSVG(&buf)
			if (err != nil) != tc.err {
				t.Fatalf("WriteSVG: %v, want error %v", err, tc.err)
			}
			if err != nil {
				return
			}
			d := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
			var text strings.Builder
			for {
				tok, err := d.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("not XML: %v", err)
				}
				if cd, ok := tok.(xml.CharData); ok {
					text.Write(cd)
				}
			}
			for _, g := range tc.c.Groups {
				if !strings.Contains(text.String(), g) {
					t.Errorf("no %q in the SVG", g)
				}
			}
			for _, s := range tc.c.Series {
				if !strings.Contains(text.String(), s.Name) {
					t.Errorf("no %q in the SVG", s.Name)
				}
			}
		})
	}
}

// TestLinearTicks checks the 1-2-5 steps.
func TestLinearTicks(t *testing.T) {
	ticks := linearTicks{func(v float64) string { return "x" }}.Ticks(0, 23e6)
	if len(ticks) < 4 || len(ticks) > 7 || ticks[0].Value != 0 || ticks[1].Value != 5e6 {
		t.Errorf("ticks %v", ticks)
	}
}
