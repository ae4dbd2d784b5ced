package itemstore

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// benchItems is the number of items the benchmarks keep in a store.
const benchItems = 1 << 16

// benchStore returns a 64 MiB store holding benchItems items of class 1 and
// their locations.
func benchStore(b *testing.B) (*Store, []uint32) {
	s := newStore(b, Options{MemoryLimit: 64 << 20})
	locs := make([]uint32, benchItems)
	for i := range locs {
		locs[i], _ = setRelease(b, s, i, smallValue, 1, 0, 0)
	}
	return s, locs
}

// benchKeys returns the keys and hashes of key numbers first to first+n-1.
func benchKeys(first, n int) ([][]byte, []uint64) {
	keys, hashes := make([][]byte, n), make([]uint64, n)
	for i := range n {
		keys[i], hashes[i] = keyOf(first+i), hashOf(first+i)
	}
	return keys, hashes
}

// BenchmarkAllocLink measures one set as the server does it: Alloc (with
// the class's CLOCK sweep once the single page is full), value fill, Link,
// Unlink of the key's previous location, Release.
func BenchmarkAllocLink(b *testing.B) {
	s := newStore(b, onePage)
	perPage := s.Classes()[0].ChunksPerPage
	locs := make([]uint32, 2*perPage) // keys outnumber chunks: steady eviction
	for i := range locs {
		locs[i] = NotFound
	}
	keys, hashes := benchKeys(0, len(locs))
	var victims []Victim
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % len(locs)
		r, vs, err := s.Alloc(hashes[k], keys[k], smallValue, 0, 0, uint64(i), 0, victims[:0])
		if err != nil {
			b.Fatal(err)
		}
		victims = vs
		fillValue(r.Value(), k, uint64(i))
		s.Link(r)
		if old := locs[k]; old != NotFound && old != r.Loc() {
			s.Unlink(old, hashes[k])
		}
		locs[k] = r.Loc()
		r.Release()
	}
}

// BenchmarkAllocLinkParallel is BenchmarkAllocLink from GOMAXPROCS
// goroutines on one class (one class mutex) of a 64 MiB store.
func BenchmarkAllocLinkParallel(b *testing.B) {
	s := newStore(b, Options{MemoryLimit: 64 << 20})
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		keys, hashes := benchKeys(int(next.Add(1))<<24, benchItems)
		var victims []Victim
		for i := 0; pb.Next(); i++ {
			k := i % benchItems
			r, vs, err := s.Alloc(hashes[k], keys[k], smallValue, 0, 0, uint64(i), 0, victims[:0])
			if err != nil {
				b.Error(err)
				return
			}
			victims = vs
			fillValue(r.Value(), k, uint64(i))
			s.Link(r)
			r.Release()
		}
	})
}

// BenchmarkAcquireReleaseParallel measures a lock-free read: Acquire of a
// random location of benchItems, a key length check, Release, from
// GOMAXPROCS goroutines; "hot" reads one item from every goroutine.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	for _, hot := range []bool{false, true} {
		name := "spread"
		if hot {
			name = "hot"
		}
		b.Run(name, func(b *testing.B) {
			s, locs := benchStore(b)
			var seed atomic.Uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 0))
				for pb.Next() {
					loc := locs[0]
					if !hot {
						loc = locs[rng.IntN(len(locs))]
					}
					r, ok := s.Acquire(loc)
					if !ok || len(r.Key()) != 12 {
						b.Error("item lost")
						return
					}
					r.Release()
				}
			})
		})
	}
}
