package art

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkGPURangeChunks settles the pipelined call's chunk count: on
// the tree of benchPointTree (WARPKV_ART_BENCH_KEYS keys), 64Ki ranges of
// 16 and 64Ki prefix scans of 64 into a pinned Result, cut into 1, 2, 3,
// 4, 6 and 8 chunks (and the default), interleaved in one process: 5
// rounds, each timing 20 calls of every count in turn after one untimed
// call. Metrics: queries per second of each count's median round mean
// (cN-M/s; cD-M/s the default, rangePipe.count); every round's means are logged.
func BenchmarkGPURangeChunks(b *testing.B) {
	t, g, ops := rangeBenchCalls(b)
	counts := []int{1, 2, 3, 4, 6, 8, 0}
	const rounds, calls = 5, 20
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			defer func(c int) { g.pipe.chunks = c }(g.pipe.chunks)
			r := t.NewResult()
			defer r.Free()
			var err error
			if r, err = op.into(r); err != nil {
				b.Fatal(err)
			}
			ms := make([][]float64, len(counts))
			for b.Loop() {
				for range rounds {
					for i, c := range counts {
						g.pipe.chunks = c
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
			for i, c := range counts {
				name := fmt.Sprint(c)
				if c == 0 {
					name = "default"
				}
				s := slices.Clone(ms[i])
				slices.Sort(s)
				med := s[len(s)/2]
				fmt.Fprintf(&sb, "chunks %s: median %.4f ms, rounds", name, med)
				for _, m := range ms[i] {
					fmt.Fprintf(&sb, " %.4f", m)
				}
				sb.WriteString("\n")
				unit := fmt.Sprintf("c%d-M/s", c)
				if c == 0 {
					unit = "cD-M/s"
				}
				b.ReportMetric(float64(rangeBenchQueries)/med/1e3, unit)
			}
			b.Logf("ms a call, means of %d calls:\n%s", calls, sb.String())
		})
	}
}
