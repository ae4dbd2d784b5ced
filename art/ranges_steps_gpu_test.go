package art

import (
	"fmt"
	"testing"
	"time"

	"github.com/warpkv/warpkv/engine"
)

// BenchmarkGPURangeSteps times the device steps of the GPU engine's
// ranges and prefix calls (64Ki ranges of 16 keys, 64Ki prefix scans of
// 64, into a pinned Result, on the tree of benchPointTree:
// WARPKV_ART_BENCH_KEYS keys) with each walk of rangesCands (walkLanes 1:
// aq_cands and aq_trim; 8, 16, 32: aq_walk8/16/32), traced with an
// engine.StepTrace: the bounds' upload, the walk, the three scans, the
// totals' readback, the pairs and the answers' download. Metrics: queries
// per second of the whole call, and each step's device time averaged over
// the timed calls (walk-ms, scans-ms, readback-ms, pairs-ms, answers-ms);
// the last call's steps are logged.
func BenchmarkGPURangeSteps(b *testing.B) {
	t, _, _, slices, _, _ := benchPointTree(b)
	g := t.eng.(*gpuEngine)
	const Q = 1 << 16
	qs, pre := make([]Query, Q), make([][]byte, Q)
	for i := range qs {
		qs[i] = Query{Lo: slices[i]}
		pre[i] = slices[i][:2]
	}
	ops := []struct {
		name string
		into func(r *Result) (*Result, error)
	}{
		{"ranges16", func(r *Result) (*Result, error) { return t.RangesInto(r, qs, 16) }},
		{"prefix64", func(r *Result) (*Result, error) { return t.PrefixInto(r, pre, 64) }},
	}
	metrics := []struct{ step, unit string }{
		{"walk", "walk-ms"}, {"scans", "scans-ms"}, {"totals read back", "readback-ms"}, {"pairs", "pairs-ms"}, {"done", "answers-ms"},
	}
	for _, op := range ops {
		for _, lanes := range []int{1, 8, 16, 32} {
			b.Run(fmt.Sprintf("%s/lanes=%d", op.name, lanes), func(b *testing.B) {
				defer func(w int) { g.walkLanes = w }(g.walkLanes)
				g.walkLanes = lanes
				g.trace = &engine.StepTrace{}
				defer func() {
					if err := g.trace.Close(); err != nil {
						b.Error(err)
					}
					g.trace = nil
				}()
				r := t.NewResult()
				defer r.Free()
				r, err := op.into(r)
				if err != nil {
					b.Fatal(err)
				}
				sums := make(map[string]time.Duration)
				var steps []engine.Step
				for b.Loop() {
					if r, err = op.into(r); err != nil {
						b.Fatal(err)
					}
					if steps, err = g.trace.Steps(); err != nil {
						b.Fatal(err)
					}
					for _, s := range steps {
						sums[s.Name] += s.Device
					}
				}
				b.ReportMetric(float64(Q)*float64(b.N)/b.Elapsed().Seconds()/1e6, "M/s")
				for _, m := range metrics {
					if _, ok := sums[m.step]; !ok {
						b.Fatalf("no step %q traced", m.step)
					}
					b.ReportMetric(sums[m.step].Seconds()*1e3/float64(b.N), m.unit)
				}
				b.Logf("last call:\n%s", engine.FormatSteps(steps))
			})
		}
	}
}
