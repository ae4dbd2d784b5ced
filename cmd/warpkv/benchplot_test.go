package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/bench"
)

// svgTexts parses an SVG file as XML and returns its text content.
func svgTexts(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	var texts strings.Builder
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", path, err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
			}
		case xml.CharData:
			texts.Write(x)
			texts.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", path, root)
	}
	return texts.String()
}

// TestBenchPlot draws a suite report with peers and summary targets, a
// committed bench serve report, and the --target and --engine options,
// and checks the SVG: well-formed, with the cases, the series, the
// targets' legend, and the provenance printed.
func TestBenchPlot(t *testing.T) {
	dir := t.TempDir()
	rep := bench.NewReport("art", 1)
	rep.Results = []bench.Result{
		bench.NewResult("lookup 1M", "gpu", 1e6, 0, 0.001),
		bench.NewResult("lookup 1M", "tidwall/btree", 1e6, 0, 0.1),
		bench.NewResult("insert 1M", "gpu", 1e6, 0, 0.002),
		bench.NewResult("insert 1M", "tidwall/btree", 1e6, 0, 0.3),
	}
	tgt := bench.NewResult("lookups >= 3 G/s", "gpu", 1e6, 0, 0.001)
	tgt.Ratio, tgt.RatioTo = tgt.OpsPerSec/3e9, "target"
	rep.Summary = []bench.Result{tgt}
	in := filepath.Join(dir, "art.json")
	if err := bench.SaveJSON(in, rep); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		stdout []string
		texts  []string
	}{
		{"results", []string{in, "--target", "^lookup=2G"}, []string{"wrote", "2 cases x 2 series, 1 target marks", "commit:", "command:"},
			[]string{"lookup 1M", "insert 1M", "gpu", "tidwall/btree", "target", "1G"}},
		{"summary", []string{"--summary", in, "--log"}, []string{"1 cases x 1 series, 1 target marks"},
			[]string{"lookups >= 3 G/s", "target"}},
		{"engine order and filter", []string{in, "--engine", "tidwall/btree", "--ops", "insert"}, []string{"1 cases x 1 series, 0 target marks"},
			[]string{"insert 1M", "tidwall/btree"}},
		{"serve report", []string{"../../docs/results/2026-11-26-h100-serve-get1.json"}, []string{"16 cases x 3 series, 16 target marks", "not recorded"},
			[]string{"a 95:5 uniform, 1 keys/get", "memcached -t 8", "warpkv gpu", "warpkv cpu", "target"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".svg")
			code, stdout, stderr := runCmd(append([]string{"bench", "plot", "-o", out}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			texts := svgTexts(t, out)
			for _, s := range tc.texts {
				if !strings.Contains(texts, s) {
					t.Errorf("SVG text lacks %q:\n%s", s, texts)
				}
			}
		})
	}
	for _, args := range [][]string{{"bench", "plot", in}, {"bench", "plot", "-o", "x.svg"}, {"bench", "plot", in, "-o", filepath.Join(dir, "x.svg"), "--ops", "nothing"}} {
		if code, _, _ := runCmd(args...); code == 0 {
			t.Errorf("%v: exit 0, want an error", args)
		}
	}
}
