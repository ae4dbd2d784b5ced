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
// call it), on a pool of its own (pool-go-park: the same code, parked in
// Go's scheduler as main's pool was before branch parw and is again), and
// on pools that spin longer, after
// idle gaps that leave a pool's workers spinning (0, 50 µs) or parked
// (300 µs, 2 ms).
//
// Timed fan-outs run the work alone. Traced fan-outs (after the timed ones,
// same gap) record for every part the thread that ran it and when it
// started and ended, from inside the part: the pool's code has no hook, so
// the timed runs measure exactly what the engines run. (The thread id is a
// system call without the scheduler; a goroutine id would need
// runtime.Stack, which takes a process-wide lock and serialized the parts.)

// widthRunner is one way to fan out a job over [0, n) in parts.
type widthRunner struct {
	name string
	// run fans fn out over [0, n); the runner cuts [0, n) its own way.
	run func(n int, fn func(lo, hi int))
}

// widthGrain is gpu's copyPar's largest piece, 512 KiB, in uint32s.
const widthGrain = 128 << 10

// widthRunners returns the runners named in names (all when empty), and
// a function that closes the pools they started; parts is GOMAXPROCS.
func widthRunners(parts int, names []string) ([]widthRunner, func()) {
	var pools []*Pool
	pool := func(spin time.Duration) *Pool {
		p := NewPool(0, spin)
		pools = append(pools, p)
		return p
	}
	ranges := func(p *Pool, parts int) func(int, func(lo, hi int)) {
		return func(n int, fn func(lo, hi int)) { p.Ranges(n, parts, func(_, lo, hi int) { fn(lo, hi) }) }
	}
	forGrain := func(p *Pool) func(int, func(lo, hi int)) {
		return func(n int, fn func(lo, hi int)) { p.For(n, widthGrain, 0, fn) }
	}
	all := map[string]func() func(int, func(lo, hi int)){
		"go": func() func(int, func(lo, hi int)) {
			return func(n int, fn func(lo, hi int)) { Ranges(n, parts, func(_, lo, hi int) { fn(lo, hi) }) }
		},
		"pool":                 func() func(int, func(lo, hi int)) { return ranges(Shared(), parts) },
		"pool-for512K":         func() func(int, func(lo, hi int)) { return forGrain(Shared()) },
		"pool-go-park":         func() func(int, func(lo, hi int)) { return ranges(pool(DefaultSpin), parts) },
		"pool-go-park-for512K": func() func(int, func(lo, hi int)) { return forGrain(pool(DefaultSpin)) },
		"pool-spin2ms":         func() func(int, func(lo, hi int)) { return ranges(pool(2*time.Millisecond), parts) },
		"pool-spin2ms-8":       func() func(int, func(lo, hi int)) { return ranges(pool(2*time.Millisecond), 8) },
	}
	order := []string{"go", "pool", "pool-for512K", "pool-go-park", "pool-go-park-for512K", "pool-spin2ms", "pool-spin2ms-8"}
	if len(names) == 0 {
		names = order
	}
	var rs []widthRunner
	for _, name := range names {
		mk, ok := all[name]
		if !ok {
			panic(fmt.Sprintf("no width runner %q", name))
		}
		rs = append(rs, widthRunner{name: name, run: mk()})
	}
	return rs, func() {
		for _, p := range pools {
			p.Close()
		}
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
	// scan is art's offsetsPart loop (offsetsOK's before): the
	// differences of rising offsets ORed.
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

// partRec is one traced part: its range, the thread that ran it, and its
// start and end after the fan-out's start.
type partRec struct {
	lo, hi     int
	tid        int
	start, end time.Duration
}

// traceSummary is what the traced fan-outs of one case showed (medians
// over the fan-outs).
type traceSummary struct {
	threads     float64 // distinct threads that ran parts
	callerShare float64 // fraction of the parts the caller's thread ran
	mostParts   float64 // parts the busiest thread ran
	half, last  float64 // µs until half of the threads / the last thread started a part
	parts       float64
}

// summarize reduces the traced fan-outs recs (one slice per fan-out, with
// the caller's thread id in callers).
func summarize(recs [][]partRec, callers []int) traceSummary {
	var ts, share, most, half, last, parts []float64
	for k, rs := range recs {
		byT := map[int]int{}
		firstByT := map[int]time.Duration{}
		for _, r := range rs {
			byT[r.tid]++
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
		for _, c := range byT {
			m = max(m, c)
		}
		ts = append(ts, float64(len(byT)))
		share = append(share, float64(byT[callers[k]])/float64(len(rs)))
		most = append(most, float64(m))
		half = append(half, us(firsts[(len(firsts)-1)/2]))
		last = append(last, us(firsts[len(firsts)-1]))
		parts = append(parts, float64(len(rs)))
	}
	return traceSummary{median(ts), median(share), median(most), median(half), median(last), median(parts)}
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

// widthSizes returns the job sizes in MB: WARPKV_PAR_WIDTH_MB
// (comma-separated; a size ending in "c" is cold: each fan-out works on
// the next of 8 regions, so its data comes from DRAM, not the last-level
// cache) or 4, 20, 80 and 80c.
func widthSizes(b *testing.B) (mbs []int, cold []bool) {
	spec := os.Getenv("WARPKV_PAR_WIDTH_MB")
	if spec == "" {
		spec = "4,20,80,80c"
	}
	for f := range strings.SplitSeq(spec, ",") {
		c := strings.HasSuffix(f, "c")
		v, err := strconv.Atoi(strings.TrimSuffix(f, "c"))
		if err != nil || v <= 0 {
			b.Fatalf("WARPKV_PAR_WIDTH_MB: %q is not a size in MB", f)
		}
		mbs, cold = append(mbs, v), append(cold, c)
	}
	return mbs, cold
}

// coldRegions is how many regions a cold size's fan-outs rotate over.
const coldRegions = 8

// BenchmarkPoolWidth times fan-outs of memory-bound work of 4, 20 and 80
// MB (warm: the host's last-level cache can hold them) and 80 MB cold
// (GB/s of the job's bytes: copy reads and writes each, scan reads them)
// after idle gaps of 0, 50 µs, 300 µs and 2 ms, on each runner and inline
// on the caller (the one-core floor), then traces as many fan-outs again.
// Metrics: us-med (median fan-out), GB/s (from the median), and from the
// traces threads that ran parts, caller-share of the parts, most-parts on
// one thread, half-us and last-us (when half of the threads, and the
// last, started their first part). Run with -test.benchtime Nx (N
// fan-outs timed, N traced); WARPKV_PAR_WIDTH_MB picks the sizes and
// WARPKV_PAR_WIDTH_RUNNERS (comma-separated) the runners.
func BenchmarkPoolWidth(b *testing.B) {
	mbs, colds := widthSizes(b)
	var names []string
	if s := os.Getenv("WARPKV_PAR_WIDTH_RUNNERS"); s != "" {
		names = strings.Split(s, ",")
	}
	parts := runtime.GOMAXPROCS(0)
	b.Logf("%s, GOMAXPROCS %d, NumCPU %d", runtime.Version(), parts, runtime.NumCPU())
	runners, closePools := widthRunners(parts, names)
	defer closePools()
	maxN := 0
	for i, mb := range mbs {
		if colds[i] {
			mb *= coldRegions
		}
		maxN = max(maxN, mb<<20/4)
	}
	src, dst := make([]uint32, maxN), make([]uint32, maxN)
	for i := range src {
		src[i] = uint32(i) * 16
	}
	copy(dst, src) // every page faulted in before timing
	sink := make([]uint32, 1024)
	gaps := []time.Duration{0, 50 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond}
	for _, w := range widthWorks {
		for i, mb := range mbs {
			n, cold := mb<<20/4, colds[i]
			regions := 1
			name := fmt.Sprintf("%dMB", mb)
			if cold {
				regions, name = coldRegions, name+"-cold"
			}
			bodies := make([]func(lo, hi int), regions)
			for r := range regions {
				bodies[r] = w.body(dst[r*n:(r+1)*n], src[r*n:(r+1)*n], sink)
			}
			bytes := float64(n * 4)
			b.Run(fmt.Sprintf("%s/%s/inline", w.name, name), func(b *testing.B) {
				var ts []float64
				k := 0
				for b.Loop() {
					t0 := time.Now()
					bodies[k%regions](0, n)
					ts = append(ts, us(time.Since(t0)))
					k++
				}
				report(b, ts, bytes)
			})
			for _, r := range runners {
				for _, gap := range gaps {
					b.Run(fmt.Sprintf("%s/%s/%s/gap=%v", w.name, name, r.name, gap), func(b *testing.B) {
						clear(dst[:regions*n])
						var ts, gapSeen []float64
						k := 0
						for b.Loop() {
							if gap > 0 {
								g0 := time.Now()
								time.Sleep(gap)
								gapSeen = append(gapSeen, us(time.Since(g0)))
							}
							t0 := time.Now()
							r.run(n, bodies[k%regions])
							ts = append(ts, us(time.Since(t0)))
							k++
						}
						report(b, ts, bytes)
						if gap > 0 {
							b.ReportMetric(median(gapSeen), "gap-us")
						}
						if w.name == "copy" && !slices.Equal(dst[:min(k, regions)*n], src[:min(k, regions)*n]) {
							b.Fatalf("%s: the copy differs from its source", r.name)
						}
						s, err := traceWidth(len(ts), gap, n, r, bodies)
						if err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(s.threads, "threads")
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

// traceWidth runs reps traced fan-outs over [0, n) on r, each after gap
// and each on the next of bodies, and summarizes them.
func traceWidth(reps int, gap time.Duration, n int, r widthRunner, bodies []func(lo, hi int)) (traceSummary, error) {
	var recs [][]partRec
	var callers []int
	for k := range reps {
		var mu sync.Mutex
		var rs []partRec
		if gap > 0 {
			time.Sleep(gap)
		}
		body := bodies[k%len(bodies)]
		callers = append(callers, syscall.Gettid())
		t0 := time.Now()
		r.run(n, func(lo, hi int) {
			rec := partRec{lo: lo, hi: hi, tid: syscall.Gettid(), start: time.Since(t0)}
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
	return summarize(recs, callers), nil
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
