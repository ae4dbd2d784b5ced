package btree

import (
	"testing"

	tbtree "github.com/tidwall/btree"

	"github.com/warpkv/warpkv/prim"
)

func benchKeys(n int, seed uint64) ([]uint64, []uint64) {
	k, v := make([]uint64, n), make([]uint64, n)
	for i := range k {
		k[i] = prim.SplitMix64(seed, uint64(i))
		v[i] = uint64(i)
	}
	return k, v
}

func BenchmarkBuild1M(b *testing.B) {
	k, v := benchKeys(1<<20, 1)
	tr, _ := Open(Options{Device: "cpu"})
	b.SetBytes(16 << 20)
	for b.Loop() {
		if err := tr.Build(k, v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(k))/b.Elapsed().Seconds()/1e6, "Mkeys/s")
}

func BenchmarkInsert100KInto1M(b *testing.B) {
	k, v := benchKeys(1<<20, 1)
	nk, nv := benchKeys(100_000, 2)
	tr, _ := Open(Options{Device: "cpu"})
	for b.Loop() {
		b.StopTimer()
		if err := tr.Build(k, v); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := tr.Insert(nk, nv); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(nk))/b.Elapsed().Seconds()/1e6, "Mkeys/s")
}

func BenchmarkGet1M(b *testing.B) {
	k, v := benchKeys(1<<20, 1)
	tr, _ := Open(Options{Device: "cpu"})
	if err := tr.Build(k, v); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		tr.Get(k)
	}
	b.ReportMetric(float64(b.N)*float64(len(k))/b.Elapsed().Seconds()/1e6, "Mkeys/s")
}

// BenchmarkTidwallGet1M is the baseline: the same lookups in
// github.com/tidwall/btree on one goroutine.
func BenchmarkTidwallGet1M(b *testing.B) {
	k, v := benchKeys(1<<20, 1)
	var m tbtree.Map[uint64, uint64]
	for i := range k {
		m.Set(k[i], v[i])
	}
	for b.Loop() {
		for _, key := range k {
			m.Get(key)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(k))/b.Elapsed().Seconds()/1e6, "Mkeys/s")
}
