package compat

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb"

	"github.com/warpkv/warpkv/internal/workload"
	"github.com/warpkv/warpkv/mpt"
)

// hashBenchPairs is the trie size of BenchmarkHash.
const hashBenchPairs = 100_000

// BenchmarkHash measures hashing alone, a fresh trie of 100K pairs of the
// YCSB-like and ETHT-like data sets built outside the timer: warpkv's
// sequential and parallel engines against go-ethereum's trie (which hashes
// the root's children on goroutines). Run with -cpu 1 for per-core
// figures (go-ethereum's goroutines then share one core too), e.g.
//
//	go test -run - -bench Hash -cpu 1,2 -benchtime 5x
func BenchmarkHash(b *testing.B) {
	for _, ds := range []workload.Dataset{workload.YCSB, workload.ETHT} {
		keys, values, err := workload.Generate(ds, hashBenchPairs, 5)
		if err != nil {
			b.Fatal(err)
		}
		for _, eng := range mpt.Engines() {
			b.Run(fmt.Sprintf("%s/%s", ds, eng), func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					tr, err := mpt.Open(mpt.Options{Engine: eng})
					if err != nil {
						b.Fatal(err)
					}
					if err := tr.Update(keys, values); err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					b.StartTimer()
					tr.Hash()
				}
				b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "pairs/s")
			})
		}
		b.Run(fmt.Sprintf("%s/geth", ds), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				tr := trie.NewEmpty(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil))
				for i := range keys {
					tr.MustUpdate(keys[i], values[i])
				}
				runtime.GC()
				b.StartTimer()
				tr.Hash()
			}
			b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
