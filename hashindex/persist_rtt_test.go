package hashindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkPersistentRoundTrip measures the round trip of the resident
// search: a batch of n jobs (0: the doorbell and its answer alone, no hash
// read and no table search), half of them hits, on a table of
// benchBuckets buckets holding 2^20 keys, by c callers at once, each on
// its own slot, as a server's event loops call it. It reports each
// call's latency as the callers saw it (p50-ns, p99-ns, the mean as ns/call), the batches served per second
// by all callers together (batches/s), and from the kernel's trace, per
// batch, the device's time from seeing the doorbell to its answer
// (serve-ns) and of the answer's store (answer-ns), and the time of one
// look at the doorbell over the bus (poll-ns).
func BenchmarkPersistentRoundTrip(b *testing.B) {
	ix, keys := newPersistBenchIndex(b)
	ps, err := ix.newPersistentSearch(8, 512, true)
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Close()
	benchRoundTrip(b, ps, keys)
}

// benchRoundTrip runs BenchmarkPersistentRoundTrip's cases on ps (8 slots
// of at least 512 jobs, tracing).
func benchRoundTrip(b *testing.B, ps *PersistentSearch, keys []uint64) {
	const maxCallers = 8
	r := rand.New(rand.NewPCG(1, 7))
	for slot := range maxCallers {
		hs := ps.Hashes(slot)
		for i := range hs {
			if i%2 == 0 {
				hs[i] = keys[r.IntN(len(keys))]
			} else {
				hs[i] = r.Uint64()
			}
		}
	}
	for _, n := range []int{0, 1, 48, 512} {
		for _, callers := range []int{1, 8} {
			b.Run(fmt.Sprintf("jobs=%d/callers=%d", n, callers), func(b *testing.B) {
				lat := make([][]time.Duration, callers)
				errs := make([]error, callers)
				time.Sleep(3 * IdleExit) // the last run's poller has added to the trace
				before := slices.Clone(ps.trace.Slice())
				b.ResetTimer()
				began := time.Now()
				var wg sync.WaitGroup
				for c := range callers {
					wg.Go(func() {
						calls := b.N / callers
						if c < b.N%callers {
							calls++
						}
						ls := make([]time.Duration, 0, calls)
						for range calls {
							t0 := time.Now()
							if err := ps.search(c, n, true); err != nil {
								errs[c] = err
								return
							}
							ls = append(ls, time.Since(t0))
						}
						lat[c] = ls
					})
				}
				wg.Wait()
				wall := time.Since(began)
				b.StopTimer()
				time.Sleep(3 * IdleExit) // the poller adds to the trace as it exits
				tr := ps.trace.Slice()
				var trs [ctlLine]uint64
				for i := range tr {
					trs[i%ctlLine] += tr[i] - before[i]
				}
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				all := slices.Concat(lat...)
				if len(all) == 0 {
					return
				}
				slices.Sort(all)
				var sum time.Duration
				for _, l := range all {
					sum += l
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(sum.Nanoseconds())/float64(len(all)), "ns/call")
				b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "p99-ns")
				b.ReportMetric(float64(len(all))/wall.Seconds(), "batches/s")
				if bs := trs[trBatches]; bs > 0 {
					b.ReportMetric(float64(trs[trServeNs])/float64(bs), "serve-ns")
					b.ReportMetric(float64(trs[trAnswerNs])/float64(bs), "answer-ns")
				}
				if ls := trs[trLoads]; ls > 0 {
					b.ReportMetric(float64(trs[trLoadNs])/float64(ls), "poll-ns")
				}
			})
		}
	}
}
