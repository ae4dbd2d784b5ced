package server

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/warpkv/warpkv/kv"
)

// benchKeys is the key count of the engine benchmarks, preloaded.
const benchKeys = 100000

// benchEngine starts an engine on ec with benchKeys keys of 8-byte values
// (opts with a 256 MB memory limit).
func benchEngine(b *testing.B, ec engineCase, opts Options) *Engine {
	opts.MemoryLimit = 256 << 20
	eng := newTestEngine(b, ec, opts)
	for i := 0; i < benchKeys; i += 500 {
		ops := make([]kv.Op, 0, 500)
		for k := i; k < min(i+500, benchKeys); k++ {
			ops = append(ops, kv.Op{Kind: kv.Set, Key: benchKey(k), Value: []byte("vvvvvvvv")})
		}
		do(b, eng, ops...)
	}
	eng.quiesce()
	return eng
}

func benchKey(i int) []byte { return fmt.Appendf(nil, "k%07x", i) }

// benchmarkDo runs batches built by fill on every parallel goroutine and
// reports allocations per batch (b.N counts batches).
func benchmarkDo(b *testing.B, fill func(r *rand.Rand, keys [][]byte, b *kv.Batch)) {
	benchmarkDoOpts(b, nil, fill)
}

// benchmarkDoOpts is benchmarkDo on engines with the options opts returns
// for each (nil: the defaults); report, if any, runs after each engine's
// measurement (to report metrics of its own).
func benchmarkDoOpts(b *testing.B, opts func(engineCase, Options) Options, fill func(r *rand.Rand, keys [][]byte, b *kv.Batch), report ...func(*testing.B)) {
	for _, ec := range testEngines {
		b.Run(ec.name, func(b *testing.B) {
			var o Options
			if opts != nil {
				o = opts(ec, o)
			}
			eng := benchEngine(b, ec, o)
			keys := make([][]byte, benchKeys)
			for i := range keys {
				keys[i] = benchKey(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 1))
				var batch kv.Batch
				for pb.Next() {
					batch.Reset()
					fill(r, keys, &batch)
					if err := eng.Do(&batch); err != nil {
						b.Error(err)
						return
					}
				}
			})
			for _, f := range report {
				f(b)
			}
		})
	}
}

// BenchmarkDoMultiGet10 is a 10-key multi-get per batch (a connection's
// round of one request).
func BenchmarkDoMultiGet10(b *testing.B) {
	benchmarkDo(b, func(r *rand.Rand, keys [][]byte, batch *kv.Batch) {
		for range 10 {
			batch.Add(kv.Op{Kind: kv.Get, Key: keys[r.IntN(len(keys))]})
		}
	})
}

// BenchmarkDoPipelined16 is a round of 16 pipelined requests, 5% sets.
func BenchmarkDoPipelined16(b *testing.B) {
	val := []byte("wwwwwwww")
	benchmarkDo(b, func(r *rand.Rand, keys [][]byte, batch *kv.Batch) {
		for range 16 {
			k := keys[r.IntN(len(keys))]
			if r.IntN(20) == 0 {
				batch.Add(kv.Op{Kind: kv.Set, Key: k, Value: val})
			} else {
				batch.Add(kv.Op{Kind: kv.Get, Key: k})
			}
		}
	})
}

// BenchmarkDoSet is one set per batch.
func BenchmarkDoSet(b *testing.B) {
	val := []byte("wwwwwwww")
	benchmarkDo(b, func(r *rand.Rand, keys [][]byte, batch *kv.Batch) {
		batch.Add(kv.Op{Kind: kv.Set, Key: keys[r.IntN(len(keys))], Value: val})
	})
}

// BenchmarkDoIncr is one incr per batch (a read-modify-write: a search).
func BenchmarkDoIncr(b *testing.B) {
	benchmarkDo(b, func(r *rand.Rand, keys [][]byte, batch *kv.Batch) {
		batch.Add(kv.Op{Kind: kv.Incr, Key: keys[r.IntN(len(keys))], Delta: 1})
	})
}

// BenchmarkDoGet5 is five single gets per batch: an event loop's round at
// 64 connections with one request each (4.6 requests a round measured on
// the H200 machine). On the CPU engine it compares the inline search with
// the hop to the scheduler goroutine (cpu-batched). The batch interval is
// warpkv serve's default (none on the CPU, 20 µs on a GPU).
func BenchmarkDoGet5(b *testing.B) {
	benchmarkDoOpts(b, servedInterval, func(r *rand.Rand, keys [][]byte, batch *kv.Batch) {
		for range 5 {
			batch.Add(kv.Op{Kind: kv.Get, Key: keys[r.IntN(len(keys))]})
		}
	})
}

// servedInterval sets opts' batch interval to warpkv serve's default on
// ec: none on the CPU engine (negative: no wait), DefaultGPUInterval on a
// GPU.
func servedInterval(ec engineCase, opts Options) Options {
	opts.Interval = DefaultGPUInterval
	if ec.device == "cpu" {
		opts.Interval = -1
	}
	return opts
}

// BenchmarkDoMultiGetRound is an event loop's round of 64 pipelined
// 10-key multi-gets (4 connections of 16): the reads of `loadgen
// --pipeline 16 --multiget 10`, without the sets, whose waits for index
// updates would hide the CPU time. It reports ns per key.
func BenchmarkDoMultiGetRound(b *testing.B) {
	var keys atomic.Int64
	benchmarkDoOpts(b, nil, func(r *rand.Rand, all [][]byte, batch *kv.Batch) {
		for range 640 {
			batch.Add(kv.Op{Kind: kv.Get, Key: all[r.IntN(len(all))]})
		}
		keys.Add(640)
	}, func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(keys.Swap(0), 1)), "ns/key")
	})
}
