package gpu

import (
	"bytes"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// TestPackChunks packs ragged batches (empty strings, long strings, a
// packed batch viewed from a larger one) in chunks of a few strings with
// several workers, in both forms, and checks that the chunks laid end to
// end are the batch: the bytes in order and every offset where the batch
// puts its string, counted from the first.
func TestPackChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		n := r.IntN(3 * packMinPart)
		if trial%2 == 0 {
			n = r.IntN(60)
		}
		keys := make([][]byte, n)
		for i := range keys {
			l := []int{0, 0, 1, 16, 33, 300, 5000}[r.IntN(7)]
			if l > 0 {
				l = 1 + r.IntN(l)
			}
			keys[i] = make([]byte, l)
			for j := range keys[i] {
				keys[i][j] = byte(r.Uint32())
			}
		}
		pre := r.IntN(3)
		var data []byte
		offs := make([]uint32, 0, pre+n+1)
		for i := 0; i < pre; i++ {
			offs = append(offs, uint32(len(data)))
			data = append(data, 'x', 'y')
		}
		for _, k := range keys {
			offs = append(offs, uint32(len(data)))
			data = append(data, k...)
		}
		offs = append(offs, uint32(len(data)))
		want := bytes.Join(keys, nil)
		size := 1 + r.IntN(max(1, n))
		workers := 1 + r.IntN(4)
		for form, s := range []Strings{{Data: data, Offs: offs[pre:]}, {Slices: keys}} {
			if s.Len() != n {
				t.Fatalf("trial %d form %d: Len %d, want %d", trial, form, s.Len(), n)
			}
			l, bad := s.Sizes(size, 1<<16, workers)
			if bad != -1 {
				t.Fatalf("trial %d form %d: bad %d", trial, form, bad)
			}
			if l.Bytes() != len(want) {
				t.Fatalf("trial %d form %d: total %d, want %d", trial, form, l.Bytes(), len(want))
			}
			gotData := make([]byte, len(want))
			gotOffs := make([]uint32, n+1)
			for c := range l.Chunks() {
				lo, hi := l.Bounds(c, n)
				// The chunk's own buffers, as a pinned slot holds them.
				d, o := make([]byte, l.Starts[c+1]-l.Starts[c]), make([]uint32, hi-lo+1)
				if c%2 == 0 {
					s.PackChunk(l, c, d, o)
				} else { // PackChunkAnd hands each part's strings to also once
					seen := make([]int32, hi-lo)
					s.PackChunkAnd(l, c, d, o, func(plo, phi int) {
						for i := plo; i < phi; i++ {
							atomic.AddInt32(&seen[i], 1)
						}
					})
					for i, v := range seen {
						if v != 1 {
							t.Fatalf("trial %d form %d chunk %d: string %d given to also %d times", trial, form, c, lo+i, v)
						}
					}
				}
				copy(gotData[l.Starts[c]:], d)
				if c > 0 && gotOffs[lo] != o[0] {
					t.Fatalf("trial %d form %d chunk %d: starts at %d, the chunk before ends at %d", trial, form, c, o[0], gotOffs[lo])
				}
				copy(gotOffs[lo:], o)
			}
			if !bytes.Equal(gotData, want) {
				t.Fatalf("trial %d form %d (%d strings, chunks of %d): bytes differ", trial, form, n, size)
			}
			at := uint32(0)
			for i, k := range keys {
				if gotOffs[i] != at {
					t.Fatalf("trial %d form %d: offset %d is %d, want %d", trial, form, i, gotOffs[i], at)
				}
				at += uint32(len(k))
			}
			if n > 0 && gotOffs[n] != at {
				t.Fatalf("trial %d form %d: end %d, want %d", trial, form, gotOffs[n], at)
			}
		}
	}
}

// TestSizesFindsTheFirstLongString checks that Sizes of slices names the
// first string over the limit, wherever the parts split.
func TestSizesFindsTheFirstLongString(t *testing.T) {
	n := 5 * packMinPart
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte{1, 2}
	}
	for _, at := range []int{0, 7, packMinPart + 3, n - 1} {
		keys[at] = make([]byte, 9)
		keys[n-1] = make([]byte, 9)
		if _, bad := (Strings{Slices: keys}).Sizes(100, 8, 4); bad != at {
			t.Fatalf("first long string %d, want %d", bad, at)
		}
		keys[at], keys[n-1] = []byte{1}, []byte{1}
	}
}

// BenchmarkPackChunk packs 2^18 16-byte keys (a point call's chunk) from
// Go slices and from a packed batch into ordinary memory.
func BenchmarkPackChunk(b *testing.B) {
	const n = 1 << 18
	keys := make([][]byte, n)
	data := make([]byte, 16*n)
	offs := make([]uint32, n+1)
	for i := range keys {
		keys[i] = data[16*i : 16*i+16]
		offs[i+1] = uint32(16 * (i + 1))
	}
	d, o := make([]byte, 16*n), make([]uint32, n+1)
	for _, c := range []struct {
		name string
		s    Strings
	}{{"packed", Strings{Data: data, Offs: offs}}, {"slices", Strings{Slices: keys}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(20 * n)
			for b.Loop() {
				l, _ := c.s.Sizes(n, 1<<16, 0)
				c.s.PackChunk(l, 0, d, o)
			}
		})
	}
}
