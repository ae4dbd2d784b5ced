package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/workload"
)

// BenchmarkGPUARTQueryCalls times, call by call, the GPU engine's calls
// of 64Ki ranges of 16 and 64Ki prefix scans of 64 on trees of
// WARPKV_ART_BENCH_KEYS 16-byte keys (default 1Mi; 100000000 for the
// issue's tree), to find what `bench art`'s rows add to the call that
// art's BenchmarkGPUWholeCalls times. Sub-benchmarks: plain/weyl (first,
// before anything else opens the device: an engine of art.Open on the
// test device, the tree and queries of GPUWholeCalls: weylKeys, the
// first 64Ki as lower bounds), bench/ranges and bench/prefix (the bench's
// engine from OpenARTEngines, its inputs, a tree built before each op as
// RunARTCase builds it) and bench/weyl (GPUWholeCalls' tree and queries
// on a second tree of the bench's device). Each logs, call by call, the
// call's and the engine's own (LastBatch) milliseconds: 24 calls of the
// old bench's timed call (artEngine.Answer) after the build (the bench times
// calls 2-4, median), 24 of the tree's call on queries made once
// (AnswerCall, what the bench times now), 8 more of Answer, then 4 after
// a runtime.GC and 4 after 50 ms idle. Metrics: queries per second of
// the median of calls 2-4 (bench-M/s), of the mean of calls 5-24
// (steady-M/s), and of b.Loop over AnswerCall's call (M/s).
func BenchmarkGPUARTQueryCalls(b *testing.B) {
	size := 1 << 20
	if s := os.Getenv("WARPKV_ART_BENCH_KEYS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1<<17 {
			b.Fatalf("WARPKV_ART_BENCH_KEYS=%q: want a number of keys >= %d", s, 1<<17)
		}
		size = v
	}
	dev := gputest.Device(b)
	const Q = 1 << 16
	wk, wv := weylKeys(size)
	weylQueries := art.Keys{Data: wk.Data[:16*Q], Offs: wk.Offs[:Q+1]}
	b.Run("plain/weyl", func(b *testing.B) {
		t, err := art.Open(art.Options{GPU: dev})
		if err != nil {
			b.Fatal(err)
		}
		e := &artEngine{name: "plain", t: t}
		defer e.Close()
		queryCalls(b, e, ARTRanges, wk, wv, weylQueries)
	})
	eng, err := OpenARTEngines("gpu", "gpu")
	if err != nil {
		gputest.Unavailable(b, err.Error())
	}
	b.Cleanup(func() { eng.Close() })
	ge := eng.Impls[len(eng.Impls)-1].(*artEngine)
	in := NewARTInputs()
	for _, op := range []ARTOp{ARTRanges, ARTPrefix} {
		c := ARTCase{Op: op, Keys: ARTKeys16, Tree: size, Batch: Q}
		b.Run("bench/"+string(op), func(b *testing.B) {
			d := in.Data(c)
			k, v := in.Tree(c.Keys, c.Tree)
			queryCalls(b, ge, op, k, v, d.Keys)
		})
	}
	b.Run("bench/weyl", func(b *testing.B) {
		t, err := art.Open(art.Options{GPU: eng.dev})
		if err != nil {
			b.Fatal(err)
		}
		e := &artEngine{name: "second", t: t}
		defer e.Close()
		queryCalls(b, e, ARTRanges, wk, wv, weylQueries)
	})
}

// queryCalls builds a tree of keys k, values v on e (then runtime.GC, as
// RunARTCase) and times op's calls with the queries from qs as
// BenchmarkGPUARTQueryCalls says.
func queryCalls(b *testing.B, e *artEngine, op ARTOp, k art.Keys, v []uint64, qs art.Keys) {
	if err := e.Build(k, v); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	limit := artQueryLimit(op)
	answer := func() error { return e.Answer(op, qs, limit) }
	into := e.AnswerCall(op, qs, limit)
	calls := func(name string, n int, f func() error) []float64 {
		ts, tot := make([]float64, n), make([]float64, n)
		for i := range ts {
			t0 := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			ts[i] = time.Since(t0).Seconds()
			_, tt := e.LastBatchTimes()
			tot[i] = tt.Seconds()
		}
		var sb strings.Builder
		for i := range ts {
			fmt.Fprintf(&sb, " %.3f/%.3f", ts[i]*1e3, tot[i]*1e3)
		}
		b.Logf("%s, ms (call/engine's total):%s", name, sb.String())
		return ts
	}
	n := float64(qs.Len())
	first := calls("answer, after the build", 24, answer)
	b.ReportMetric(n/Median(first[1:4])/1e6, "bench-M/s")
	b.ReportMetric(n/mean(first[4:])/1e6, "steady-M/s")
	calls("into, queries made once", 24, into)
	calls("answer, again", 8, answer)
	runtime.GC()
	calls("answer, after runtime.GC", 4, answer)
	time.Sleep(50 * time.Millisecond)
	calls("answer, after 50 ms idle", 4, answer)
	for b.Loop() {
		if err := into(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds()/1e6, "M/s")
}

// weylKeys returns the tree of art's BenchmarkGPUWholeCalls (its
// benchKeysPar): n distinct 16-byte keys, key i starting with
// i*0x9E3779B97F4A7C15 ^ 0x5555 big-endian, then 8 bytes of a splitmix64
// hash of i, and the values 0..n-1. Cost: O(n) on all cores.
func weylKeys(n int) (art.Keys, []uint64) {
	data, offs, vals := workload.WeylKeys16(n)
	return art.Keys{Data: data, Offs: offs}, vals
}

// mean is the mean of xs.
func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
