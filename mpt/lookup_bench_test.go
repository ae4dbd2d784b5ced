package mpt

import (
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/workload"
)

// BenchmarkLookup measures batch lookups of 100K present keys in a
// 100K-pair trie of each data set: Lookup (values alias the trie on the
// CPU engines; on the GPU engine, values copied into fresh memory) and
// LookupInto (values copied into one reused buffer), on the CPU engines
// and, where a GPU is usable, the GPU engine (skipped
// otherwise; go test -bench Lookup -benchtime 20x).
func BenchmarkLookup(b *testing.B) {
	for _, ds := range []workload.Dataset{workload.YCSB, workload.ETHT} {
		keys, values, err := workload.Generate(ds, 100_000, 5)
		if err != nil {
			b.Fatal(err)
		}
		for _, eng := range []Engine{EngineSequential, EngineParallel, EngineGPU} {
			b.Run(fmt.Sprintf("%s/%s", ds, eng), func(b *testing.B) {
				var tr *Trie
				if eng == EngineGPU {
					d := gputest.Device(b)
					g, err := newGPUTrie(d, false, false)
					if err != nil {
						b.Fatal(err)
					}
					tr = onGPU(g, Options{})
					defer tr.Close()
				} else {
					tr = mustNew(Options{Engine: eng})
				}
				if err := tr.Update(keys, values); err != nil {
					b.Fatal(err)
				}
				b.Run("Lookup", func(b *testing.B) {
					for b.Loop() {
						if _, found := tr.getBatch(keys); !found[0] {
							b.Fatal("absent")
						}
					}
					b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "keys/s")
				})
				b.Run("LookupInto", func(b *testing.B) {
					var out Values
					for b.Loop() {
						if err := tr.LookupInto(keys, &out); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "keys/s")
				})
			})
		}
	}
}
