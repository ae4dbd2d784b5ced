package art

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedOrderMatchesStableSort checks sortedOrder (radix sorts of
// 8-byte windows, runs of equal windows refined by length and the next
// window) against one stable comparison sort, for several worker counts,
// on key shapes that reach every path: short keys over an alphabet with a
// zero byte (many duplicates, keys that are prefixes of others differing
// only in trailing zeros), long keys sharing prefixes of 0-40 bytes with
// lengths around the window bounds (7, 8, 9, 15, 16, 17, ...), random
// 16-byte keys, and batches of at most sortSmall keys.
func TestSortedOrderMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	shapes := []struct {
		name string
		n    int
		key  func() []byte
	}{
		{"short keys of a, b and zero bytes", 5*sortGrain + 123, func() []byte { return randomBytes(r, 0, 3, []byte("ab\x00")) }},
		{"shared prefixes, lengths around the windows", 3*sortGrain + 7, func() []byte {
			prefix := bytes.Repeat([]byte{'p'}, []int{0, 5, 8, 16, 40}[r.IntN(5)])
			tail := randomBytes(r, 0, 1, []byte("q\x00"))
			pad := make([]byte, []int{0, 7, 8, 9, 15, 16, 17}[r.IntN(7)])
			return append(append(prefix, pad...), tail...)
		}},
		{"random 16-byte keys", 2*sortGrain + 1, func() []byte {
			k := make([]byte, 16)
			binary.BigEndian.PutUint64(k, r.Uint64()>>r.IntN(64))
			binary.BigEndian.PutUint64(k[8:], r.Uint64())
			return k
		}},
		{"a small batch", sortSmall, func() []byte { return randomBytes(r, 0, 10, []byte("x\x00")) }},
	}
	for _, sh := range shapes {
		keys := make([][]byte, sh.n)
		for i := range keys {
			keys[i] = sh.key()
		}
		kb := Pack(keys)
		want := make([]uint32, sh.n)
		for i := range want {
			want[i] = uint32(i)
		}
		slices.SortStableFunc(want, func(a, b uint32) int { return bytes.Compare(kb.At(int(a)), kb.At(int(b))) })
		for _, workers := range []int{1, 2, 3, 5} {
			if got := sortedOrder(kb, workers); !slices.Equal(got, want) {
				t.Fatalf("%s, %d workers: the order differs from a stable sort", sh.name, workers)
			}
		}
	}
}

// BenchmarkSortedOrder sorts 1Mi random 16-byte keys and 1Mi text keys
// sharing their first 8 bytes ("user:000" then a number), on GOMAXPROCS
// workers.
func BenchmarkSortedOrder(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(1, 2))
	random := make([][]byte, n)
	text := make([][]byte, n)
	for i := range random {
		random[i] = make([]byte, 16)
		binary.BigEndian.PutUint64(random[i], r.Uint64())
		binary.BigEndian.PutUint64(random[i][8:], r.Uint64())
		text[i] = []byte("user:000" + string(rune('0'+r.IntN(10))) + string(binary.BigEndian.AppendUint32(nil, r.Uint32())))
	}
	for _, c := range []struct {
		name string
		kb   Keys
	}{{"random16", Pack(random)}, {"text", Pack(text)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				sortedOrder(c.kb, 0)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
		})
	}
}

// TestLastOfRunsAndPrefixesAcrossParts checks the parallel lastOfRuns and
// distinctPrefixes against one pass each, for worker counts that cut runs
// of equal keys (and of equal prefixes) at part boundaries.
func TestLastOfRunsAndPrefixesAcrossParts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 4*sortGrain + 99
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = randomBytes(r, 0, 4, []byte("ab"))
	}
	kb := Pack(keys)
	order := sortedOrder(kb, 2)
	var want []uint32
	for i, p := range order {
		if i+1 == len(order) || !bytes.Equal(kb.At(int(p)), kb.At(int(order[i+1]))) {
			want = append(want, p)
		}
	}
	var wantPrefixes [maxWidth + 1]int
	for w := 1; w <= maxWidth; w++ {
		seen := map[string]bool{}
		for _, p := range want {
			if k := kb.At(int(p)); len(k) >= w {
				seen[string(k[:w])] = true
			}
		}
		wantPrefixes[w] = len(seen)
	}
	for _, workers := range []int{1, 2, 3, 7} {
		got := lastOfRuns(kb, slices.Clone(order), workers)
		if !slices.Equal(got, want) {
			t.Fatalf("%d workers: lastOfRuns keeps %d positions, want %d", workers, len(got), len(want))
		}
		if p := distinctPrefixes(kb, got, workers); p != wantPrefixes {
			t.Fatalf("%d workers: distinct prefixes %v, want %v", workers, p, wantPrefixes)
		}
	}
}
