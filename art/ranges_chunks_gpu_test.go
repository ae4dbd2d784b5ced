package art

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkGPURangeChunks compares chunk counts of the pipelined call: on
// the tree of benchPointTree (WARPKV_ART_BENCH_KEYS keys), 64Ki ranges of
// 16 and 64Ki prefix scans of 64 into a pinned Result (rangesPiped: 2, 3,
// 4 and 8 chunks and the default count, rangePipe.count; chunk 0 as large
// as the others or half), interleaved in one process: 5 rounds, each
// timing 20 calls of every form in turn after one untimed call (the
// default twice a round). Metrics: queries per second of each form's
// median round mean (cN[-fD]-M/s; cD the default count, a second timing
// of a form -2); every round's means are logged.
func BenchmarkGPURangeChunks(b *testing.B) {
	t, g, ops := rangeBenchCalls(b)
	type form struct{ chunks, firstDiv int }
	forms := []form{{0, 1}, {0, 2}, {2, 1}, {3, 1}, {4, 1}, {4, 2}, {8, 1}, {0, 1}}
	const rounds, calls = 5, 20
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			keepPipeForm(b, g)
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
