package mpt

import (
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/internal/workload"
)

// clearRefs makes every node below n dirty again (for hashing benchmarks).
func clearRefs(n node) {
	switch n := n.(type) {
	case *fullNode:
		n.cache.clear()
		for _, c := range n.children[:16] {
			clearRefs(c)
		}
	case *shortNode:
		n.cache.clear()
		clearRefs(n.val)
	}
}

// BenchmarkHash measures hashing a whole trie of 100K pairs of each data
// set (every node dirty), on the sequential and the parallel engine
// (GOMAXPROCS workers: run with -cpu 1,2,... for the scaling).
func BenchmarkHash(b *testing.B) {
	for _, ds := range []workload.Dataset{workload.YCSB, workload.ETHT} {
		keys, values, err := workload.Generate(ds, 100_000, 5)
		if err != nil {
			b.Fatal(err)
		}
		for _, eng := range Engines() {
			tr := mustNew(Options{Engine: eng})
			if err := tr.Update(keys, values); err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/%s", ds, eng), func(b *testing.B) {
				for b.Loop() {
					clearRefs(tr.cpu.root)
					tr.Hash()
				}
				b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "pairs/s")
			})
		}
	}
}
