package server

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/loadgen"
)

// TestStaleReadsAreRare runs Zipf multi-gets with 5% sets on many
// goroutines: reads whose located item went away before they acquired it
// (and had to locate it again) must stay rare.
func TestStaleReadsAreRare(t *testing.T) {
	eng := newTestEngine(t, testEngines[0], Options{MemoryLimit: 256 << 20, Interval: -1})
	keys := make([][]byte, 20000)
	for i := range keys {
		keys[i] = benchKey(i)
	}
	for i := 0; i < len(keys); i += 500 {
		var ops []kv.Op
		for _, k := range keys[i : i+500] {
			ops = append(ops, kv.Op{Kind: kv.Set, Key: k, Value: []byte("vvvvvvvv")})
		}
		do(t, eng, ops...)
	}
	z := loadgen.NewZipf(uint64(len(keys)), loadgen.ZipfTheta)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 5))
			for range 500 {
				var ops []kv.Op
				for range 16 {
					if r.IntN(20) == 0 {
						ops = append(ops, kv.Op{Kind: kv.Set, Key: keys[z.Rank(r.Float64())], Value: []byte("wwwwwwww")})
						continue
					}
					for range 10 {
						ops = append(ops, kv.Op{Kind: kv.Get, Key: keys[z.Rank(r.Float64())]})
					}
				}
				do(t, eng, ops...)
			}
		})
	}
	wg.Wait()
	stale, gets := eng.counts.staleReads.Load(), eng.counts.gets.Load()
	t.Logf("%d stale reads in %d gets, %d index drops", stale, gets, eng.counts.indexDrops.Load())
	if stale*1000 > gets {
		t.Errorf("%d stale reads in %d gets: more than 1 in 1000", stale, gets)
	}
}
