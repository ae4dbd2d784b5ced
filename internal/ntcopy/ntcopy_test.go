package ntcopy

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/warpkv/warpkv/internal/par"
)

// TestBytesCopiesExactlyTheRange copies every length around the
// thresholds at every alignment of both ends and checks the copied range
// against the source and the bytes around it against their fill.
func TestBytesCopiesExactlyTheRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lengths := []int{0, 1, 15, 63, 64, minBytes - 1, minBytes, minBytes + 1, minBytes + 63, 3*minBytes + 17, step - 1, step + 65, 2*step + 129}
	for _, n := range lengths {
		for _, dOff := range []int{0, 1, 7, 8, 15, 16, 33} {
			for _, sOff := range []int{0, 3, 16} {
				src := make([]byte, n+sOff+64)
				for i := range src {
					src[i] = byte(r.Uint32())
				}
				dst := make([]byte, n+dOff+64)
				for i := range dst {
					dst[i] = 0xA5
				}
				if got := Bytes(dst[dOff:dOff+n], src[sOff:sOff+n]); got != n {
					t.Fatalf("n %d dst+%d src+%d: copied %d", n, dOff, sOff, got)
				}
				for i := range dst {
					want := byte(0xA5)
					if i >= dOff && i < dOff+n {
						want = src[sOff+i-dOff]
					}
					if dst[i] != want {
						t.Fatalf("n %d dst+%d src+%d: byte %d is %#x, want %#x", n, dOff, sOff, i, dst[i], want)
					}
				}
			}
		}
	}
}

// TestBytesStopsAtTheShorterSlice copies into a shorter destination and
// from a shorter source.
func TestBytesStopsAtTheShorterSlice(t *testing.T) {
	src := make([]byte, 3*minBytes)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	for _, c := range []struct{ dst, src, want int }{{minBytes, 3 * minBytes, minBytes}, {3 * minBytes, 2*minBytes + 5, 2*minBytes + 5}} {
		dst := make([]byte, c.dst)
		if got := Bytes(dst, src[:c.src]); got != c.want {
			t.Fatalf("dst %d src %d: copied %d, want %d", c.dst, c.src, got, c.want)
		}
		for i := range c.want {
			if dst[i] != src[i] {
				t.Fatalf("dst %d src %d: byte %d is %#x, want %#x", c.dst, c.src, i, dst[i], src[i])
			}
		}
	}
}

// TestSliceCopiesElements copies uint64s and 12-byte structs.
func TestSliceCopiesElements(t *testing.T) {
	u := make([]uint64, 10000)
	for i := range u {
		u[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
	v := make([]uint64, len(u)+3)
	if n := Slice(v[3:], u); n != len(u) {
		t.Fatalf("copied %d uint64s, want %d", n, len(u))
	}
	for i := range u {
		if v[3+i] != u[i] {
			t.Fatalf("uint64 %d is %#x, want %#x", i, v[3+i], u[i])
		}
	}
	type rec struct{ a, b, c uint32 }
	s := make([]rec, 5000)
	for i := range s {
		s[i] = rec{uint32(i), uint32(2 * i), uint32(3 * i)}
	}
	d := make([]rec, len(s))
	if n := Slice(d, s); n != len(s) {
		t.Fatalf("copied %d records, want %d", n, len(s))
	}
	for i := range s {
		if d[i] != s[i] {
			t.Fatalf("record %d is %v, want %v", i, d[i], s[i])
		}
	}
	if n := Slice[uint64](nil, u); n != 0 {
		t.Fatalf("copied %d into nil", n)
	}
}

// BenchmarkParallelCopy copies 80 MB from one array to another on
// several goroutines that take pieces of a given size in turn, with the
// built-in copy and with Bytes: the shape of the pinned pipeline's host
// copies. Reported: GB/s copied (bytes written per second).
func BenchmarkParallelCopy(b *testing.B) {
	const total = 80 << 20
	src, dst := make([]byte, total), make([]byte, total)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src) // fault every page in
	workers := runtime.GOMAXPROCS(0)
	for _, piece := range []int{64 << 10, 128 << 10, 512 << 10, 1 << 20} {
		for _, nt := range []bool{false, true} {
			name := "copy"
			if nt {
				name = "nt"
			}
			b.Run(fmt.Sprintf("piece=%dK/%s/workers=%d", piece>>10, name, workers), func(b *testing.B) {
				b.SetBytes(total)
				for b.Loop() {
					par.For(total, piece, workers, func(lo, hi int) {
						if nt {
							Bytes(dst[lo:hi], src[lo:hi])
						} else {
							copy(dst[lo:hi], src[lo:hi])
						}
					})
				}
			})
		}
	}
}
