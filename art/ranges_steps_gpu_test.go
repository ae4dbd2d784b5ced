package art

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// BenchmarkGPURangeSteps times the device steps of the GPU engine's
// ranges and prefix calls in one piece (64Ki ranges of 16 keys, 64Ki
// prefix scans of 64, into a pinned Result, on the tree of benchPointTree:
// WARPKV_ART_BENCH_KEYS keys) with each walk of rangesCands (walkLanes 1:
// aq_cands and aq_trim; 8, 16, 32: aq_walk8/16/32), traced with an
// engine.StepTrace: the bounds' upload, the walk, the three scans, the
// totals' readback, the pairs and the answers' download. Metrics: queries
// per second of the whole call, and each step's device time averaged over
// the timed calls (walk-ms, scans-ms, readback-ms, pairs-ms, answers-ms);
// the last call's steps are logged.
func BenchmarkGPURangeSteps(b *testing.B) {
	t, g, ops := rangeBenchCalls(b)
	metrics := []struct{ step, unit string }{
		{"walk", "walk-ms"}, {"scans", "scans-ms"}, {"totals read back", "readback-ms"}, {"pairs", "pairs-ms"}, {"done", "answers-ms"},
	}
	for _, op := range ops {
		for _, lanes := range []int{1, 8, 16, 32} {
			b.Run(fmt.Sprintf("%s/lanes=%d", op.name, lanes), func(b *testing.B) {
				defer func(w, c int) { g.walkLanes, g.pipe.chunks = w, c }(g.walkLanes, g.pipe.chunks)
				g.walkLanes, g.pipe.chunks = lanes, 1 // one piece: the steps below
				r := tracedCall(b, t, g, op)
				var err error
				sums := make(map[string]time.Duration)
				var steps []engine.Step
				for b.Loop() {
					if r, err = op.into(r); err != nil {
						b.Fatal(err)
					}
					if err := g.s.Synchronize(); err != nil { // the stream past the mark after the drain
						b.Fatal(err)
					}
					if steps, err = g.trace.Steps(); err != nil {
						b.Fatal(err)
					}
					for _, s := range steps {
						sums[s.Name] += s.Device
					}
				}
				b.ReportMetric(float64(rangeBenchQueries)*float64(b.N)/b.Elapsed().Seconds()/1e6, "M/s")
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

// BenchmarkGPURangeTimeline is the timeline of whole ranges and prefix
// calls into a pinned Result (64Ki ranges of 16 keys, 64Ki prefix scans of
// 64, on the tree of benchPointTree: WARPKV_ART_BENCH_KEYS keys), in one
// piece and pipelined in 2 to 4 and 8 chunks (rangesPiped; chunk 0 as large as
// the others, or 1/2 or 1/4 of them: first=1:d), traced with an
// engine.StepTrace: the host time before the engine's call starts
// (Tree.query's bound checks, the locks: pre-ms), the engine's host time
// from its start to the end of its drain (engine-ms), the host time after
// it until the call returns (post-ms), the whole call as the caller sees
// it (call-ms) and the device time from the engine's first mark to its
// last (device-ms), each averaged over the timed calls; the last call's
// steps (device and host time of each, host synchronizations) are logged.
func BenchmarkGPURangeTimeline(b *testing.B) {
	t, g, ops := rangeBenchCalls(b)
	for _, op := range ops {
		for _, pc := range []struct{ chunks, firstDiv int }{{1, 1}, {2, 1}, {2, 2}, {2, 4}, {3, 1}, {3, 2}, {3, 4}, {4, 1},
			{4, 2}, {4, 4}, {8, 1}} {
			b.Run(fmt.Sprintf("%s/chunks=%d,first=1:%d", op.name, pc.chunks, pc.firstDiv), func(b *testing.B) {
				keepPipeForm(b, g)
				g.pipe.chunks, g.pipe.firstDiv = pc.chunks, pc.firstDiv
				r := tracedCall(b, t, g, op)
				var err error
				var preT, eng, post, call, dev time.Duration
				var steps []engine.Step
				for b.Loop() {
					t0 := time.Now()
					if r, err = op.into(r); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if err := g.s.Synchronize(); err != nil {
						b.Fatal(err)
					}
					if steps, err = g.trace.Steps(); err != nil {
						b.Fatal(err)
					}
					var host time.Duration
					for _, s := range steps {
						host += s.Host
					}
					began := g.trace.Began()
					preT += began.Sub(t0)
					eng += host
					post += t1.Sub(began) - host
					call += t1.Sub(t0)
					dev += steps[len(steps)-1].DeviceFrom
				}
				ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
				b.ReportMetric(float64(rangeBenchQueries)*float64(b.N)/b.Elapsed().Seconds()/1e6, "M/s")
				b.ReportMetric(ms(call), "call-ms")
				b.ReportMetric(ms(preT), "pre-ms")
				b.ReportMetric(ms(eng), "engine-ms")
				b.ReportMetric(ms(post), "post-ms")
				b.ReportMetric(ms(dev), "device-ms")
				b.Logf("last call (%d pairs, %d key bytes):\n%s\n%s", len(r.Values), len(r.Keys.Data), engine.FormatSteps(steps),
					pipeTimes(g, g.pipe.count(rangeBenchQueries, op.limit)))
			})
		}
	}
}

// pipeTimes formats the device times of a drained pipelined call's
// chunks (c of them, as traced: the downloads' ends recorded), ms from
// chunk 0's walk queued: each chunk's walk queued and its totals
// written, its pairs (on s) and the end of its downloads (on out), or
// "-" where an event did not time.
func pipeTimes(g *gpuEngine, c int) string {
	if c < 2 {
		return "one piece: no chunk times"
	}
	var sb strings.Builder
	sb.WriteString("chunk  walk  walked  pairs  paired  fetched (ms from chunk 0's walk)\n")
	for k := range c {
		fmt.Fprintf(&sb, "%5d", k)
		for _, e := range []*gpu.Event{g.pipe.walkAt[k], g.pipe.walked[k], g.pipe.pairsAt[k], g.pipe.paired[k], g.pipe.fetched[k]} {
			if d, err := gpu.Elapsed(g.pipe.walkAt[0], e); err == nil {
				fmt.Fprintf(&sb, " %7.4f", d.Seconds()*1e3)
			} else {
				sb.WriteString("       -")
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// rangeBenchQueries is the queries of a call of rangeBenchCalls.
const rangeBenchQueries = 1 << 16

// rangeBenchCall is a call of the range benchmarks: answer into r.
type rangeBenchCall struct {
	name  string
	limit int
	into  func(r *Result) (*Result, error)
}

// rangeBenchCalls returns the tree of benchPointTree, its GPU engine and
// the calls the range benchmarks time: 64Ki ranges of 16 from its first
// keys (ranges16) and 64Ki prefix scans of 64 of their first 2 bytes
// (prefix64).
func rangeBenchCalls(b *testing.B) (*Tree, *gpuEngine, []rangeBenchCall) {
	t, _, _, slices, _, _ := benchPointTree(b)
	qs, pre := make([]Query, rangeBenchQueries), make([][]byte, rangeBenchQueries)
	for i := range qs {
		qs[i] = Query{Lo: slices[i]}
		pre[i] = slices[i][:2]
	}
	return t, t.eng.(*gpuEngine), []rangeBenchCall{
		{"ranges16", 16, func(r *Result) (*Result, error) { return t.RangesInto(r, qs, 16) }},
		{"prefix64", 64, func(r *Result) (*Result, error) { return t.PrefixInto(r, pre, 64) }},
	}
}

// tracedCall gives g a StepTrace (closed, and g's taken away, when b
// ends) and answers op once into a new pinned Result (freed when b ends),
// which it returns for the timed calls.
func tracedCall(b *testing.B, t *Tree, g *gpuEngine, op rangeBenchCall) *Result {
	g.trace = &engine.StepTrace{}
	r := t.NewResult()
	b.Cleanup(func() {
		if err := errors.Join(g.trace.Close(), r.Free()); err != nil {
			b.Error(err)
		}
		g.trace = nil
	})
	got, err := op.into(r)
	if err != nil {
		b.Fatal(err)
	}
	return got
}
