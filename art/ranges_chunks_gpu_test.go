package art

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkGPURangeChunks settles the pipelined call's chunk count and
// how the answers reach the Result: on the tree of benchPointTree
// (WARPKV_ART_BENCH_KEYS keys), 64Ki ranges of 16 and 64Ki prefix scans
// of 64 into a pinned Result, cut into 1, 2, 3, 4, 6 and 8 chunks (and the
// default), each with the answers stored by aq_pairs into the Result's
// mapped arrays (direct) and downloaded (copies), interleaved in one
// process: 5 rounds, each timing 20 calls of every form in turn after one
// untimed call. Metrics: queries per second of each form's median round
// mean (cN-M/s direct, cN-copies-M/s; cD the default count,
// rangePipe.count); every round's means are logged.
func BenchmarkGPURangeChunks(b *testing.B) {
	t, g, ops := rangeBenchCalls(b)
	type form struct {
		chunks int
		copies bool
	}
	var forms []form
	for _, c := range []int{1, 2, 3, 4, 6, 8, 0} {
		forms = append(forms, form{c, false}, form{c, true})
	}
	const rounds, calls = 5, 20
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			defer func(c int, copies bool) { g.pipe.chunks, g.pipe.copies = c, copies }(g.pipe.chunks, g.pipe.copies)
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
						g.pipe.chunks, g.pipe.copies = f.chunks, f.copies
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
			for i, f := range forms {
				name, unit := fmt.Sprint(f.chunks), fmt.Sprintf("c%d", f.chunks)
				if f.chunks == 0 {
					name, unit = "default", "cD"
				}
				if f.copies {
					name, unit = name+", copies", unit+"-copies"
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
