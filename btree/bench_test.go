package btree

import (
	"slices"
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

// BenchmarkRanges1M answers 64Ki range queries of about 16 keys each in
// a tree of 1Mi keys on the CPU engine, into a reused Result.
func BenchmarkRanges1M(b *testing.B) {
	k, v := benchKeys(1<<20, 1)
	tr, _ := Open(Options{Device: "cpu"})
	if err := tr.Build(k, v); err != nil {
		b.Fatal(err)
	}
	sorted := slices.Clone(k)
	slices.Sort(sorted)
	const q = 1 << 16
	los, his := make([]uint64, q), make([]uint64, q)
	for i := range los {
		j := (i * 7919) % (len(sorted) - 16)
		los[i], his[i] = sorted[j], sorted[j+16]
	}
	r, err := tr.RangesInto(nil, los, his, 0)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if r, err = tr.RangesInto(r, los, his, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*q/b.Elapsed().Seconds()/1e6, "Mqueries/s")
}

// BenchmarkGet8M looks up 1Mi keys, half absent, in a tree of 8Mi keys
// (node arrays well past the caches) on the CPU engine.
func BenchmarkGet8M(b *testing.B) {
	k, v := benchKeys(1<<23, 1)
	tr, _ := Open(Options{Device: "cpu"})
	if err := tr.Build(k, v); err != nil {
		b.Fatal(err)
	}
	q, _ := benchKeys(1<<20, 9)
	copy(q[:len(q)/2], k[:len(q)/2])
	vals, found := make([]uint64, len(q)), make([]bool, len(q))
	for b.Loop() {
		if err := tr.Lookup(q, vals, found); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(q))/b.Elapsed().Seconds()/1e6, "Mkeys/s")
}
