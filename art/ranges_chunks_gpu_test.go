package art

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkGPURangeChunks compares forms of the pipelined call: on the
// tree of benchPointTree (WARPKV_ART_BENCH_KEYS keys), 64Ki ranges of 16
// and 64Ki prefix scans of 64 into a pinned Result (rangesPiped: 2 and 4
// chunks and the default count; chunk 0 as large as the others or half;
// the path without options, and the options (defaultRangeOptions): together, one at a time,
// packAhead, pairsEarly),
// interleaved in one process: 5 rounds, each timing 20 calls of every
// form in turn after one untimed call (the path without options and the options'
// defaults twice a round). Metrics: queries per second of each form's
// median round mean (cN[-fD][-opt]-M/s; cD the default count,
// rangePipe.count); every round's means are logged.
func BenchmarkGPURangeChunks(b *testing.B) {
	t, g, ops := rangeBenchCalls(b)
	// form: "" the path without options; the options: "new" (oneScan,
	// fillOnce, lazyTimes), one of them alone ("1scan", "fill1", "lazy"),
	// "ahead" (new and packAhead) or "early" (ahead and pairsEarly).
	type form struct {
		chunks, firstDiv int
		opt              string
	}
	forms := []form{{0, 1, ""}, {0, 1, "new"}, {0, 1, "ahead"}, {0, 1, "early"}, {0, 1, "1scan"}, {0, 1, "fill1"}, {0, 1, "lazy"},
		{0, 2, "ahead"}, {0, 2, "early"}, {0, 4, "early"}, {2, 1, "early"}, {4, 1, "early"}, {4, 2, "early"}, {4, 1, ""},
		{0, 1, ""}, {0, 1, "new"}, {0, 1, "ahead"}, {0, 1, "early"}}
	const rounds, calls = 5, 20
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			defer g.pipe.setForm(g.pipe.form())
			r := t.NewResult()
			defer r.Free()
			var err error
			if r, err = op.into(r); err != nil {
				b.Fatal(err)
			}
			ms := make([][]float64, len(forms))
			for b.Loop() {
				for range rounds {
					for i, f := range forms {
						g.pipe.chunks, g.pipe.firstDiv = f.chunks, f.firstDiv
						g.pipe.setForm(optForm(g.pipe.form(), f.chunks, f.firstDiv, f.opt))
						if r, err = op.into(r); err != nil {
							b.Fatal(err)
						}
						t0 := time.Now()
						for range calls {
							if r, err = op.into(r); err != nil {
								b.Fatal(err)
							}
						}
						ms[i] = append(ms[i], time.Since(t0).Seconds()*1e3/calls)
					}
				}
			}
			var sb strings.Builder
			seen := map[string]int{}
			for i, f := range forms {
				name, unit := fmt.Sprint(f.chunks), fmt.Sprintf("c%d", f.chunks)
				if f.chunks == 0 {
					name, unit = "default", "cD"
				}
				if f.firstDiv > 1 {
					name, unit = fmt.Sprintf("%s, first 1:%d", name, f.firstDiv), fmt.Sprintf("%s-f%d", unit, f.firstDiv)
				}
				if f.opt != "" {
					name, unit = fmt.Sprintf("%s, %s", name, f.opt), fmt.Sprintf("%s-%s", unit, f.opt)
				}
				if seen[unit]++; seen[unit] > 1 { // a form timed twice a round
					name, unit = fmt.Sprintf("%s (#%d)", name, seen[unit]), fmt.Sprintf("%s-%d", unit, seen[unit])
				}
				s := slices.Clone(ms[i])
				slices.Sort(s)
				med := s[len(s)/2]
				fmt.Fprintf(&sb, "chunks %s: median %.4f ms, rounds", name, med)
				for _, m := range ms[i] {
					fmt.Fprintf(&sb, " %.4f", m)
				}
				sb.WriteString("\n")
				b.ReportMetric(float64(rangeBenchQueries)/med/1e3, unit+"-M/s")
			}
			b.Logf("ms a call, means of %d calls:\n%s", calls, sb.String())
		})
	}
}

// optForm returns base with the pipelined call's options that opt names
// ("" none: the path without options; "new": oneScan, fillOnce and lazyTimes; "1scan",
// "fill1", "lazy": one of them; "ahead": new and packAhead; "early":
// ahead and pairsEarly) and chunks c, chunk 0 of 1/firstDiv.
func optForm(base pipeForm, c, firstDiv int, opt string) pipeForm {
	f := base
	f.chunks, f.firstDiv = c, firstDiv
	all := opt == "new" || opt == "ahead" || opt == "early"
	f.oneScan, f.fillOnce, f.lazyTimes = all || opt == "1scan", all || opt == "fill1", all || opt == "lazy"
	f.packAhead, f.pairsEarly = opt == "ahead" || opt == "early", opt == "early"
	return f
}
