package art

import (
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/internal/par"
)

// BenchmarkQueryPacking times, on the host alone, what packing a batch of
// 64Ki range queries (16-byte lower bounds, no upper bound) into the
// pinned layout of uploadQueries costs: sizing the bounds (planQueries)
// and copying them (fill) on 1 and on GOMAXPROCS workers, both as the
// engine does them (packQueries: one pass for bounds of one length, on
// par.Shared's workers), and an empty fan-out over GOMAXPROCS goroutines,
// new ones (par.Ranges) and par.Shared's (the floor of every parallel
// pass); and turning 64Ki 2-byte prefixes into queries
// (prefixQueries) on one goroutine and in parts of 8192, 4096 and 2048.
func BenchmarkQueryPacking(b *testing.B) {
	const Q = 1 << 16
	kb, _, _ := benchKeys(Q, 16)
	qs := make([]Query, Q)
	for i := range qs {
		qs[i] = Query{Lo: kb.At(i)}
	}
	workers := par.Workers(0)
	for _, w := range []int{1, workers} {
		p, err := planQueries(qs, w)
		if err != nil {
			b.Fatal(err)
		}
		h := make([]byte, p.l.end)
		b.Run(fmt.Sprintf("plan/workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				_, _ = planQueries(qs, w)
			}
		})
		b.Run(fmt.Sprintf("fill/workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				p.fill(h, qs)
			}
		})
		b.Run(fmt.Sprintf("packQueries/workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				_, _, _ = packQueries(qs, w, func(int) ([]byte, error) { return h, nil })
			}
		})
	}
	b.Run(fmt.Sprintf("fanout/parts=%d", workers), func(b *testing.B) {
		for b.Loop() {
			par.Ranges(Q, workers, func(int, int, int) {})
		}
	})
	b.Run(fmt.Sprintf("fanout/shared/parts=%d", workers), func(b *testing.B) {
		for b.Loop() {
			par.Shared().Ranges(Q, workers, func(int, int, int) {})
		}
	})
	pre := make([][]byte, Q)
	for i := range pre {
		pre[i] = kb.At(i)[:2]
	}
	for _, m := range []int{Q, 8192, 4096, 2048} {
		b.Run(fmt.Sprintf("prefixQueries/minPer=%d", m), func(b *testing.B) {
			for b.Loop() {
				_ = prefixQueriesBy(pre, m)
			}
		})
	}
}
