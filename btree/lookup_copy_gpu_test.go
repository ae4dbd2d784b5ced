package btree

import (
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// BenchmarkGPULookupCopies looks up 10M keys (half absent) in one 100M-key
// tree of the default order, as bench btree's "lookup 10M in 100M": the
// whole call from Go slices with the pinned staging rings copied on 8 and
// on 16 goroutines, and from a pinned Staging (no host copies), the
// reference the host copies are measured against. host-GB/s is the bytes
// the host copies into and out of the rings (keys in, values and flags
// out: 17 bytes a key) over the whole call.
func BenchmarkGPULookupCopies(b *testing.B) {
	d := gputest.Device(b)
	g := newBenchTree(b, d, DefaultOrder)
	gt := g.e.(*gpuTree)
	q := benchQueries
	vals, found := make([]uint64, len(q)), make([]bool, len(q))
	for _, w := range []int{stageWorkers, 16} {
		b.Run(fmt.Sprintf("call/stageWorkers=%d", w), func(b *testing.B) {
			if err := gt.setStageWorkers(w); err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := gt.setStageWorkers(stageWorkers); err != nil {
					b.Fatal(err)
				}
			}()
			for b.Loop() {
				if err := g.Lookup(q, vals, found); err != nil {
					b.Fatal(err)
				}
			}
			reportPhases(b, len(q), g.LastBatch())
			b.ReportMetric(17*float64(len(q))*float64(b.N)/b.Elapsed().Seconds()/1e9, "host-GB/s")
		})
	}
	b.Run("staged", func(b *testing.B) {
		st, err := g.NewStaging(len(q))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Free()
		copy(st.Keys, q)
		for b.Loop() {
			if err := g.LookupStaged(st, len(q)); err != nil {
				b.Fatal(err)
			}
		}
		reportPhases(b, len(q), g.LastBatch())
	})
}
