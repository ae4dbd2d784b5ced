package art

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/par"
)

// checkFanOuts are the ways BenchmarkBatchCheck fans the check's pass out:
// par.Shared's persistent workers (main's offsetsOK until ains9), new
// goroutines (scanOffsets), and one goroutine (one core's rate).
var checkFanOuts = []struct {
	name string
	run  func(n, parts int, fn func(p, lo, hi int))
}{
	{"shared", func(n, parts int, fn func(p, lo, hi int)) { par.Shared().Ranges(n, parts, fn) }},
	{"fresh", par.Ranges},
	{"one", func(n, parts int, fn func(p, lo, hi int)) {
		for p := range parts {
			fn(p, par.Bound(n, parts, p), par.Bound(n, parts, p+1))
		}
	}},
}

// BenchmarkBatchCheck times the insert's check of a batch of 10M 16-byte
// keys (a pass over 40 MB of offsets, offsetsPart's loop) fanned out in
// each of checkFanOuts' ways, after an idle gap of 0, 300 us (par.Shared's
// workers past their 200 us spin) and 5 ms (parked), and reports ms and
// GB/s. Each case also logs one traced pass after the gap: every part's
// goroutine, start and end (us from the call), the parts each goroutine
// ran and how many the caller ran.
func BenchmarkBatchCheck(b *testing.B) {
	kb, _ := randomKeys(0, stepsBatchKeys)
	n := kb.Len()
	parts := par.Parts(n, checkMinPart, 0)
	l := kb.Offs[1] - kb.Offs[0]
	for _, f := range checkFanOuts {
		for _, gap := range []time.Duration{0, 300 * time.Microsecond, 5 * time.Millisecond} {
			b.Run(fmt.Sprintf("fan=%s/gap=%v", f.name, gap), func(b *testing.B) {
				bad := make([]uint32, parts)
				var took []time.Duration
				for b.Loop() {
					b.StopTimer()
					time.Sleep(gap)
					b.StartTimer()
					t0 := time.Now()
					f.run(n, parts, func(p, lo, hi int) { bad[p], _ = offsetsPart(kb.Offs[lo:hi+1], l) })
					took = append(took, time.Since(t0))
				}
				for _, x := range bad {
					if x != 0 {
						b.Fatal("a good batch checked bad")
					}
				}
				slices.Sort(took)
				med := took[len(took)/2]
				b.ReportMetric(float64(med)/1e6, "ms-median")
				b.ReportMetric(float64(4*len(kb.Offs))/med.Seconds()/1e9, "GB/s-median")
				time.Sleep(gap)
				b.Logf("GOMAXPROCS %d, %d parts; one traced pass after the gap:\n%s", runtime.GOMAXPROCS(0), parts,
					traceCheck(f.run, kb.Offs, parts, l))
			})
		}
	}
}

// traceCheck runs one check of offs in parts fanned out by run and
// describes who ran each part when (us from the call's start), the parts
// of each goroutine and the caller's. Cost: the pass and a runtime.Stack
// per part.
func traceCheck(run func(n, parts int, fn func(p, lo, hi int)), offs []uint32, parts int, l uint32) string {
	type span struct {
		g          uint64
		start, end time.Duration
	}
	spans := make([]span, parts)
	n := len(offs) - 1
	caller := goid()
	t0 := time.Now()
	run(n, parts, func(p, lo, hi int) {
		s := time.Since(t0)
		g := goid()
		offsetsPart(offs[lo:hi+1], l)
		spans[p] = span{g, s, time.Since(t0)}
	})
	total := time.Since(t0)
	var sb strings.Builder
	per := map[uint64]int{}
	for p, s := range spans {
		per[s.g]++
		fmt.Fprintf(&sb, "        part %2d: goroutine %6d  %7.1f..%7.1f us\n", p, s.g, us(s.start), us(s.end))
	}
	fmt.Fprintf(&sb, "        total %.1f us; %d goroutines ran parts; the caller ran %d of %d", us(total), len(per), per[caller], parts)
	return sb.String()
}

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d) / 1e3 }

// goid is the running goroutine's id, read from its stack's header
// (tests only: it costs a runtime.Stack).
func goid() uint64 {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(string(s), 10, 64)
	return id
}
