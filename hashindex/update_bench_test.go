package hashindex

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/gputest"
)

// updateRoundJobs are the round sizes BenchmarkUpdateRound runs: a
// server's rounds carry a few to a few hundred updates; 1024 is the
// largest one-kernel round on the GPU (SmallUpdateMax), 2048 and 8192
// rounds past it.
var updateRoundJobs = []int{1, 8, 64, 256, SmallUpdateMax, 2048, 8192}

// BenchmarkUpdateRound times a server's update round: n/2 deletes of
// present keys, then n - n/2 inserts that put the same keys back (a
// steady table), 2^20 buckets holding 2^20 keys. "two-calls" is the
// server's round before UpdateStaged (DeleteStaged, then InsertStaged on
// one Staging), "one-call" is UpdateStaged. On the GPU engine the
// resident search kernel runs as in `warpkv serve`: a search of 16 jobs
// precedes each round (not timed). Metrics: each round's wall time at
// the median and the 99th percentile (p50-µs, p99-µs); ns/op includes the
// search.
func BenchmarkUpdateRound(b *testing.B) {
	engines := []struct {
		name string
		opts Options
	}{{"cpu", Options{Device: "cpu"}}}
	if d, err := gputest.Open(); err == nil {
		engines = append(engines, struct {
			name string
			opts Options
		}{"gpu", Options{GPU: d}})
	} else if gputest.Required() {
		b.Fatalf("GPU required (WARPKV_REQUIRE_GPU=1) but unusable: %v", err)
	}
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			o := e.opts
			o.Buckets = benchBuckets
			ix, err := Open(o)
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			keys, locs := benchKeys(1<<20, 11)
			if _, err := ix.Insert(keys, locs, nil); err != nil {
				b.Fatal(err)
			}
			var ps *PersistentSearch
			if ix.Backend().String() == "gpu" {
				if ps, err = ix.NewPersistentSearch(1, 16); err != nil {
					b.Fatal(err)
				}
				defer ps.Close()
				copy(ps.Hashes(0), keys[:16])
			}
			st, err := ix.NewStaging(slices.Max(updateRoundJobs))
			if err != nil {
				b.Fatal(err)
			}
			for _, mode := range []string{"two-calls", "one-call"} {
				for _, n := range updateRoundJobs {
					b.Run(fmt.Sprintf("%s/jobs=%d", mode, n), func(b *testing.B) {
						dels, ins := n/2, n-n/2
						var took []time.Duration
						var dropped []Dropped
						for i := 0; b.Loop(); i++ {
							first := (i * n) % (len(keys) - n)
							kh, kl := keys[first:first+n], locs[first:first+n]
							copy(st.Hashes(), kh[:dels])
							copy(st.Locs(), kl[:dels])
							copy(st.Hashes()[dels:], kh[:ins])
							copy(st.Locs()[dels:], kl[:ins])
							if ps != nil {
								if err := ps.Search(0, 16); err != nil {
									b.Fatal(err)
								}
							}
							t0 := time.Now()
							if mode == "one-call" {
								dropped, err = ix.UpdateStaged(st, dels, ins, dropped[:0])
							} else {
								if err = ix.DeleteStaged(st, dels, nil); err == nil {
									copy(st.Hashes(), kh[:ins])
									copy(st.Locs(), kl[:ins])
									dropped, err = ix.InsertStaged(st, ins, dropped[:0])
								}
							}
							took = append(took, time.Since(t0))
							if err != nil {
								b.Fatal(err)
							}
							if mode == "one-call" || dels == 0 { // the two-call round timed copies too: check only the one-call drops
								if want := ins - dels; len(dropped) != want {
									b.Fatalf("round of %d deletes and %d inserts dropped %d, want %d", dels, ins, len(dropped), want)
								}
							}
						}
						slices.Sort(took)
						b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
						b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
					})
				}
			}
		})
	}
}
