package art

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// benchKeys returns n distinct random keys of klen bytes (the first 8 a
// counter mixed by a bijection) and n random lookup keys among them.
func benchKeys(n, klen int) (Keys, []uint64, Keys) {
	r := rand.New(rand.NewPCG(1, uint64(klen)))
	data := make([]byte, 0, n*klen)
	for i := range n {
		x := uint64(i)*0x9E3779B97F4A7C15 ^ 0x5555
		data = binary.BigEndian.AppendUint64(data, x)
		for range klen - 8 {
			data = append(data, byte(r.UintN(256)))
		}
	}
	kb := Keys{Data: data, Offs: make([]uint32, n+1)}
	for i := range n {
		kb.Offs[i+1] = uint32((i + 1) * klen)
	}
	vals := make([]uint64, n)
	probe := Keys{Offs: make([]uint32, 1, n+1)}
	for i := range n {
		vals[i] = uint64(i)
		j := r.IntN(n)
		probe.Data = append(probe.Data, kb.At(j)...)
		probe.Offs = append(probe.Offs, uint32(len(probe.Data)))
	}
	return kb, vals, probe
}

// BenchmarkLookupWidth measures CPU lookups of 16-byte keys with each root
// width (the width choice's evidence; see chooseWidth).
func BenchmarkLookupWidth(b *testing.B) {
	for _, n := range []int{1 << 12, 1 << 16, 1 << 20} {
		kb, vals, probe := benchKeys(n, 16)
		order := lastOfRuns(kb, sortedOrder(kb, runtime.GOMAXPROCS(0)), 0)
		for w := 0; w <= maxWidth; w++ {
			s := buildStoreWidth(kb, vals, order, runtime.GOMAXPROCS(0), w)
			out, found := make([]uint64, n), make([]bool, n)
			b.Run(fmt.Sprintf("keys=%d/width=%d", n, w), func(b *testing.B) {
				for b.Loop() {
					s.lookup(probe, out, found, runtime.GOMAXPROCS(0))
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlookups/s")
			})
		}
	}
}

// BenchmarkCPU measures the CPU engine's batches on 16-byte keys.
func BenchmarkCPU(b *testing.B) {
	const n = 1 << 18
	kb, vals, probe := benchKeys(n, 16)
	b.Run("build", func(b *testing.B) {
		t, _ := Open(Options{Device: "cpu"})
		for b.Loop() {
			if err := t.BuildKeys(kb, vals); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
	})
	b.Run("lookup", func(b *testing.B) {
		t, _ := Open(Options{Device: "cpu"})
		t.BuildKeys(kb, vals)
		out, found := make([]uint64, n), make([]bool, n)
		for b.Loop() {
			t.Lookup(probe, out, found)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlookups/s")
	})
}

// BenchmarkCPURanges measures the CPU engine's range queries of 16 keys
// from random present keys (the bench suite's shape) on 2^18 16-byte keys.
func BenchmarkCPURanges(b *testing.B) {
	const n = 1 << 18
	kb, vals, probe := benchKeys(n, 16)
	t, _ := Open(Options{Device: "cpu"})
	if err := t.BuildKeys(kb, vals); err != nil {
		b.Fatal(err)
	}
	qs := make([]Query, n/16)
	for i := range qs {
		qs[i] = Query{Lo: probe.At(i)}
	}
	for b.Loop() {
		if _, err := t.Ranges(qs, 16); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(qs))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mqueries/s")
}
