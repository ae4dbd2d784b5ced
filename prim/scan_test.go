package prim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// scanRef is the sequential reference scan.
func scanRef[T Word](in []T, inclusive bool) []T {
	out := make([]T, len(in))
	var acc T
	for i, v := range in {
		if inclusive {
			acc += v
			out[i] = acc
		} else {
			out[i] = acc
			acc += v
		}
	}
	return out
}

// scanFirstDiff returns the first index where got and want differ, or -1.
func scanFirstDiff[T comparable](got, want []T) int {
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			return i
		}
	}
	return -1
}

func TestScanMatchesSequentialReference(t *testing.T) {
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			t.Run("uint32", func(t *testing.T) { testScan[uint32](t, e) })
			t.Run("uint64", func(t *testing.T) { testScan[uint64](t, e) })
		})
	}
}

func testScan[T Word](t *testing.T, e *Engine) {
	r := newRand(t)
	inputs := []struct {
		name string
		gen  func(n int) []T
	}{
		{"random", func(n int) []T { return randomWords[T](r, n, 64) }},
		{"all ones", func(n int) []T {
			s := make([]T, n)
			for i := range s {
				s[i] = 1
			}
			return s
		}},
		{"small values", func(n int) []T { return randomWords[T](r, n, 3) }},
	}
	scans := []struct {
		name      string
		inclusive bool
		run       func(*Engine, []T, []T) error
	}{
		{"exclusive", false, ScanExclusive[T]},
		{"inclusive", true, ScanInclusive[T]},
	}
	for _, n := range testSizes(e) {
		for _, in := range inputs {
			src := in.gen(n)
			for _, s := range scans {
				want := scanRef(src, s.inclusive)
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("n=%d/%s/%s", n, in.name, s.name)
					data := slices.Clone(src)
					out := data
					if inPlace {
						name += "/in place"
					} else {
						out = make([]T, n)
						poison(out)
					}
					if err := s.run(e, data, out); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if i := scanFirstDiff(out, want); i >= 0 {
						t.Fatalf("%s: out[%d] = %#x, want %#x", name, i, out[i], want[i])
					}
					if !inPlace && !slices.Equal(data, src) {
						t.Fatalf("%s: input modified", name)
					}
				}
			}
		}
	}
}

func TestScanRejectsShortOutput(t *testing.T) {
	for _, e := range testEngines(t) {
		if err := ScanExclusive(e, []uint32{1, 2, 3}, make([]uint32, 2)); err == nil {
			t.Errorf("%s: exclusive scan into a short output: no error", e.Name())
		}
		if err := ScanInclusive(e, []uint64{1, 2, 3}, make([]uint64, 2)); err == nil {
			t.Errorf("%s: inclusive scan into a short output: no error", e.Name())
		}
	}
}

func TestDevScanNeedsTheGPUEngine(t *testing.T) {
	if err := DevScanExclusive[uint32](NewCPU(1), nil, nil, 0); err == nil {
		t.Fatal("DevScanExclusive on the CPU engine: no error")
	}
}

// TestDevScanOnViewsWritesOnlyItsRange runs the device scans on views at
// element offsets that defeat the vector loads, and on prefixes of longer
// buffers, checking that nothing past n is written.
func TestDevScanOnViewsWritesOnlyItsRange(t *testing.T) {
	e := testGPUEngine(t)
	if e == nil {
		t.Skip("no GPU engine")
	}
	t.Run("uint32", func(t *testing.T) { testDevScanViews[uint32](t, e) })
	t.Run("uint64", func(t *testing.T) { testDevScanViews[uint64](t, e) })
}

func testDevScanViews[T Word](t *testing.T, e *Engine) {
	r := newRand(t)
	size := int(unsafe.Sizeof(*new(T)))
	const pad = 7 // elements of slack after n in every buffer
	for _, n := range []int{1, 1000, 3*scanTileItems(size) + 17, 1<<20 + 7} {
		for _, off := range []int{0, 1} {
			for _, inclusive := range []bool{false, true} {
				name := fmt.Sprintf("n=%d/offset=%d/%s", n, off, scanName(inclusive))
				src := randomWords[T](r, n, 64)
				want := scanRef(src, inclusive)
				inAll, err := gpu.Alloc[T](e.Device(), off+n+pad)
				if err != nil {
					t.Fatal(err)
				}
				outAll, err := gpu.Alloc[T](e.Device(), off+n+pad)
				if err != nil {
					t.Fatal(err)
				}
				host := make([]T, off+n+pad)
				poison(host)
				if err := outAll.Write(nil, 0, host); err != nil {
					t.Fatal(err)
				}
				copy(host[off:], src)
				if err := inAll.Write(nil, 0, host); err != nil {
					t.Fatal(err)
				}
				in := gpu.View[T](inAll, off*size, n+pad)
				out := gpu.View[T](outAll, off*size, n+pad)
				scan := DevScanExclusive[T]
				if inclusive {
					scan = DevScanInclusive[T]
				}
				if err := scan(e, in, out, n); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := e.Synchronize(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, err := outAll.Download()
				if err != nil {
					t.Fatal(err)
				}
				inAll.Free()
				outAll.Free()
				if i := scanFirstDiff(got[off:off+n], want); i >= 0 {
					t.Fatalf("%s: out[%d] = %#x, want %#x", name, i, got[off+i], want[i])
				}
				poisoned := make([]T, pad)
				poison(poisoned)
				if !slices.Equal(got[off+n:], poisoned) || (off > 0 && got[0] != poisoned[0]) {
					t.Fatalf("%s: wrote outside [0, n)", name)
				}
			}
		}
	}
}

// BenchmarkDevScan reports the device scans' bandwidth (bytes read plus
// bytes written per second) beside that of a device-to-device copy of the
// same data; the target is a ratio ("of-copy") of at least 0.7.
func BenchmarkDevScan(b *testing.B) {
	d, err := gputest.Open()
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	e, err := NewGPU(d)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.Run("uint32", func(b *testing.B) { benchDevScan[uint32](b, e, 1<<26) })
	b.Run("uint64", func(b *testing.B) { benchDevScan[uint64](b, e, 1<<25) })
}

func benchDevScan[T Word](b *testing.B, e *Engine, n int) {
	d := e.Device()
	in, err := gpu.Upload(d, randomWords[T](rand.New(rand.NewPCG(1, 2)), n, 64))
	if err != nil {
		b.Fatal(err)
	}
	defer in.Free()
	out, err := gpu.Alloc[T](d, n)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Free()
	bytes := 2 * float64(n) * float64(unsafe.Sizeof(*new(T)))
	timeIt := func(fn func() error) float64 {
		start, _ := d.NewEvent()
		end, _ := d.NewEvent()
		defer start.Close()
		defer end.Close()
		if err := fn(); err != nil { // warm up: compile, allocate scratch
			b.Fatal(err)
		}
		const reps = 20
		if err := start.Record(e.Stream()); err != nil {
			b.Fatal(err)
		}
		for range reps {
			if err := fn(); err != nil {
				b.Fatal(err)
			}
		}
		if err := end.Record(e.Stream()); err != nil {
			b.Fatal(err)
		}
		if err := end.Synchronize(); err != nil {
			b.Fatal(err)
		}
		el, err := gpu.Elapsed(start, end)
		if err != nil {
			b.Fatal(err)
		}
		return bytes * reps / (float64(el) / float64(time.Second))
	}
	copyBW := timeIt(func() error { return out.CopyFrom(e.Stream(), 0, in, 0, n) })
	for _, s := range []struct {
		name string
		run  func(*Engine, *gpu.Buffer[T], *gpu.Buffer[T], int) error
	}{{"exclusive", DevScanExclusive[T]}, {"inclusive", DevScanInclusive[T]}} {
		b.Run(s.name, func(b *testing.B) {
			var bw float64
			for b.Loop() {
				bw = timeIt(func() error { return s.run(e, in, out, n) })
			}
			b.ReportMetric(bw/1e9, "GB/s")
			b.ReportMetric(copyBW/1e9, "copy-GB/s")
			b.ReportMetric(bw/copyBW, "of-copy")
		})
	}
}
