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
// the forms before branch arng7, all or one at a time, and packAhead),
// interleaved in one process: 5 rounds, each timing 20 calls of every
// form in turn after one untimed call (the default and the old forms
// twice a round). Metrics: queries per second of each form's median round
// mean (cN[-fD][-form]-M/s; cD the default count, rangePipe.count);
// every round's means are logged.
func BenchmarkGPURangeChunks(b *testing.B) {
	t, g, ops := rangeBenchCalls(b)
	// old: the forms before branch arng7 (threeScans, fillEach,
	// eagerTimes: "old" all three, else the one named), "ahead"
	// (packAhead) or "early" (packAhead and pairsEarly).
	type form struct {
		chunks, firstDiv int
		old              string
	}
	forms := []form{{0, 1, "old"}, {0, 1, ""}, {0, 1, "ahead"}, {0, 1, "early"}, {0, 1, "3scan"}, {0, 1, "fill"}, {0, 1, "eager"},
		{0, 2, "ahead"}, {0, 2, "early"}, {0, 4, "early"}, {2, 1, "early"}, {4, 1, "early"}, {4, 2, "early"}, {4, 1, ""},
		{0, 1, "old"}, {0, 1, ""}, {0, 1, "ahead"}, {0, 1, "early"}}
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
						g.pipe.threeScans = f.old == "old" || f.old == "3scan"
						g.pipe.fillEach = f.old == "old" || f.old == "fill"
						g.pipe.eagerTimes = f.old == "old" || f.old == "eager"
						g.pipe.packAhead, g.pipe.pairsEarly = f.old == "ahead" || f.old == "early", f.old == "early"
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
				if f.old != "" {
					name, unit = fmt.Sprintf("%s, %s", name, f.old), fmt.Sprintf("%s-%s", unit, f.old)
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
