//go:build linux

package par

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// This file measures how wide a fan-out of memory-bound work really runs:
// the host copies and scans of the GPU engines (4 MB to 80 MB a fan-out)
// on new goroutines (the package's Ranges), on the Shared pool (Ranges as
// the batch checks call it, For in 512 KiB pieces as the pipelines' copies
// call it) and on a pool that spins longer, after idle gaps that leave a
// pool's workers spinning (0, 50 µs) or parked (300 µs, 2 ms).
//
// Timed fan-outs run the work alone. Traced fan-outs (after the timed ones,
// same gap) record for every part the goroutine and thread that ran it and
// when it started and ended, from inside the part: the pool's code has no
// hook, so the timed runs measure exactly what the engines run.

// widthRunner is one way to fan out a job over [0, n) in parts.
type widthRunner struct {
	name string
	// run fans fn out over [0, n); parts is the job's part count, the
	// runner may cut [0, n) its own way (For's fixed grain).
	run   func(n int, fn func(lo, hi int))
	close func()
}

// widthRunners returns the runners compared: parts is GOMAXPROCS.
func widthRunners(parts int) []widthRunner {
	spin2 := NewPool(0, 2*time.Millisecond)
	osp := newPool(0, DefaultSpin, true)
	ranges := func(f func(n, parts int, fn func(i, lo, hi int))) func(int, func(lo, hi int)) {
		return func(n int, fn func(lo, hi int)) { f(n, parts, func(_, lo, hi int) { fn(lo, hi) }) }
	}
	const grain = 128 << 10 // 512 KiB of uint32, gpu's copyPar's largest piece
	return []widthRunner{
		{name: "go", run: ranges(Ranges)},
		{name: "pool", run: ranges(Shared().Ranges)},
		{name: "pool-for512K", run: func(n int, fn func(lo, hi int)) { Shared().For(n, grain, 0, fn) }},
		// pool-os is the Shared pool's settings with the idle workers
		// parked in the kernel (futexes), woken all at once.
		{name: "pool-os", run: ranges(osp.Ranges), close: osp.Close},
		{name: "pool-os-for512K", run: func(n int, fn func(lo, hi int)) { osp.For(n, grain, 0, fn) }},
		{name: "pool-spin2ms", run: ranges(spin2.Ranges), close: spin2.Close},
		// pool-spin2ms-4 and -8 cut the job into 4 and 8 parts: how many
		// goroutines the memory's bandwidth needs.
		{name: "pool-spin2ms-4", run: func(n int, fn func(lo, hi int)) { spin2.Ranges(n, 4, func(_, lo, hi int) { fn(lo, hi) }) }},
		{name: "pool-spin2ms-8", run: func(n int, fn func(lo, hi int)) { spin2.Ranges(n, 8, func(_, lo, hi int) { fn(lo, hi) }) }},
		// inline-spinning is the job on the caller alone while the spin2
		// pool's workers spin (an empty fan-out just before wakes them all):
		// what spinning workers cost the caller's own copies.
		{name: "inline-spinning", run: func(n int, fn func(lo, hi int)) {
			spin2.Do(spin2.Workers(), func(int) {})
			fn(0, n)
		}},
	}
}

// widthWork is a memory-bound part body over elements [lo, hi).
type widthWork struct {
	name string
	body func(dst, src []uint32, sink []uint32) func(lo, hi int)
}

var widthWorks = []widthWork{
	{name: "copy", body: func(dst, src, _ []uint32) func(lo, hi int) {
		return func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) }
	}},
	// scan is offsetsOK's loop: the differences of rising offsets ORed.
	{name: "scan", body: func(_, src, sink []uint32) func(lo, hi int) {
		return func(lo, hi int) {
			var acc uint32
			s := src[lo:hi]
			i := 1
			for ; i+3 < len(s); i += 4 {
				acc |= (s[i] - s[i-1]) | (s[i+1] - s[i]) | (s[i+2] - s[i+1]) | (s[i+3] - s[i+2])
			}
			for ; i < len(s); i++ {
				acc |= s[i] - s[i-1]
			}
			sink[lo&1023] |= acc >> 16 // lo&1023: parts start on different words mostly
		}
	}},
}

// partRec is one traced part: the goroutine and thread that ran it and
// its start and end after the fan-out's start.
type partRec struct {
	lo, hi     int
	gid, tid   int
	start, end time.Duration
}

// goid returns the calling goroutine's id, parsed from its stack header
// ("goroutine 18 [running]:"). Cost: about a microsecond; traced runs only.
func goid() int {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = s[len("goroutine "):]
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	id, _ := strconv.Atoi(string(s[:i]))
	return id
}

// traceSummary is what the traced fan-outs of one case showed (medians
// over the fan-outs).
type traceSummary struct {
	goroutines, threads float64 // distinct ones that ran parts
	callerShare         float64 // fraction of the parts the caller ran
	mostParts           float64 // parts the busiest goroutine ran
	half, last          float64 // µs until half of the threads / the last thread started a part
	parts               float64
}

// summarize reduces the traced fan-outs recs (one slice per fan-out) run
// by the goroutine caller.
func summarize(recs [][]partRec, caller int) traceSummary {
	var gs, ts, share, most, half, last, parts []float64
	for _, rs := range recs {
		byG := map[int]int{}
		firstByT := map[int]time.Duration{}
		for _, r := range rs {
			byG[r.gid]++
			if f, ok := firstByT[r.tid]; !ok || r.start < f {
				firstByT[r.tid] = r.start
			}
		}
		firsts := make([]time.Duration, 0, len(firstByT))
		for _, f := range firstByT {
			firsts = append(firsts, f)
		}
		slices.Sort(firsts)
		m := 0
		for _, c := range byG {
			m = max(m, c)
		}
		gs = append(gs, float64(len(byG)))
		ts = append(ts, float64(len(firstByT)))
		share = append(share, float64(byG[caller])/float64(len(rs)))
		most = append(most, float64(m))
		half = append(half, us(firsts[(len(firsts)-1)/2]))
		last = append(last, us(firsts[len(firsts)-1]))
		parts = append(parts, float64(len(rs)))
	}
	return traceSummary{median(gs), median(ts), median(share), median(most), median(half), median(last), median(parts)}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkPoolWidth times fan-outs of memory-bound work of 4, 20 and 80
// MB (GB/s of the job's bytes: copy reads and writes each, scan reads
// them) after idle gaps of 0, 50 µs, 300 µs and 2 ms, on each runner and
// inline on the caller (the one-core floor), then traces as many fan-outs
// again. Metrics: us-med (median fan-out), GB/s (from the median), and
// from the traces threads and goroutines that ran parts, caller-share of
// the parts, most-parts on one goroutine, half-us and last-us (when half
// of the threads, and the last, started their first part). Run with
// -test.benchtime Nx (N fan-outs timed, N traced); WARPKV_PAR_WIDTH_MB
// (comma-separated) picks the sizes.
func BenchmarkPoolWidth(b *testing.B) {
	sizes := []int{4, 20, 80}
	if s := os.Getenv("WARPKV_PAR_WIDTH_MB"); s != "" {
		sizes = sizes[:0]
		for f := range strings.SplitSeq(s, ",") {
			v, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("WARPKV_PAR_WIDTH_MB: %v", err)
			}
			sizes = append(sizes, v)
		}
	}
	parts := runtime.GOMAXPROCS(0)
	b.Logf("%s, GOMAXPROCS %d, NumCPU %d", runtime.Version(), parts, runtime.NumCPU())
	runners := widthRunners(parts)
	defer func() {
		for _, r := range runners {
			if r.close != nil {
				r.close()
			}
		}
	}()
	maxN := slices.Max(sizes) << 20 / 4
	src, dst := make([]uint32, maxN), make([]uint32, maxN)
	for i := range src {
		src[i] = uint32(i) * 16
	}
	copy(dst, src) // every page faulted in before timing
	sink := make([]uint32, 1024)
	gaps := []time.Duration{0, 50 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond}
	for _, w := range widthWorks {
		for _, mb := range sizes {
			n := mb << 20 / 4
			body := w.body(dst[:n], src[:n], sink)
			bytes := float64(n * 4)
			b.Run(fmt.Sprintf("%s/%dMB/inline", w.name, mb), func(b *testing.B) {
				var ts []float64
				for b.Loop() {
					t0 := time.Now()
					body(0, n)
					ts = append(ts, us(time.Since(t0)))
				}
				report(b, ts, bytes)
			})
			for _, r := range runners {
				for _, gap := range gaps {
					b.Run(fmt.Sprintf("%s/%dMB/%s/gap=%v", w.name, mb, r.name, gap), func(b *testing.B) {
						clear(dst[:n])
						var ts, gapSeen []float64
						for b.Loop() {
							if gap > 0 {
								g0 := time.Now()
								time.Sleep(gap)
								gapSeen = append(gapSeen, us(time.Since(g0)))
							}
							t0 := time.Now()
							r.run(n, body)
							ts = append(ts, us(time.Since(t0)))
						}
						report(b, ts, bytes)
						if gap > 0 {
							b.ReportMetric(median(gapSeen), "gap-us")
						}
						if w.name == "copy" && !slices.Equal(dst[:n], src[:n]) {
							b.Fatalf("%s: the copy differs from its source", r.name)
						}
						s, err := traceWidth(len(ts), gap, n, r, body)
						if err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(s.threads, "threads")
						b.ReportMetric(s.goroutines, "goroutines")
						b.ReportMetric(s.callerShare, "caller-share")
						b.ReportMetric(s.mostParts, "most-parts")
						b.ReportMetric(s.parts, "parts")
						b.ReportMetric(s.half, "half-us")
						b.ReportMetric(s.last, "last-us")
					})
				}
			}
		}
	}
}

// traceWidth runs reps traced fan-outs of body over [0, n) on r, each
// after gap, and summarizes them.
func traceWidth(reps int, gap time.Duration, n int, r widthRunner, body func(lo, hi int)) (traceSummary, error) {
	caller := goid()
	var recs [][]partRec
	for range reps {
		var mu sync.Mutex
		var rs []partRec
		if gap > 0 {
			time.Sleep(gap)
		}
		t0 := time.Now()
		r.run(n, func(lo, hi int) {
			rec := partRec{lo: lo, hi: hi, gid: goid(), tid: syscall.Gettid(), start: time.Since(t0)}
			body(lo, hi)
			rec.end = time.Since(t0)
			mu.Lock()
			rs = append(rs, rec)
			mu.Unlock()
		})
		if err := coversOnce(rs, n); err != nil {
			return traceSummary{}, fmt.Errorf("%s: %w", r.name, err)
		}
		recs = append(recs, rs)
	}
	return summarize(recs, caller), nil
}

// coversOnce checks that the parts rs cut [0, n) exactly.
func coversOnce(rs []partRec, n int) error {
	s := slices.SortedFunc(slices.Values(rs), func(a, b partRec) int { return a.lo - b.lo })
	at := 0
	for _, r := range s {
		if r.lo != at || r.hi < r.lo {
			return fmt.Errorf("part [%d, %d) where %d was next", r.lo, r.hi, at)
		}
		at = r.hi
	}
	if at != n {
		return fmt.Errorf("parts end at %d of %d", at, n)
	}
	return nil
}

// report sets the benchmark's median metrics from fan-out times ts (µs).
func report(b *testing.B, ts []float64, bytes float64) {
	m := median(ts)
	b.ReportMetric(m, "us-med")
	b.ReportMetric(bytes/m/1e3, "GB/s")
}
