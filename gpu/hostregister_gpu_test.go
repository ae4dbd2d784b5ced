package gpu_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/par"
)

// TestRegisterHost checks that a transfer from registered Go memory
// (RegisterHost) and back into it moves the bytes unchanged, and that
// Unregister twice is harmless.
func TestRegisterHost(t *testing.T) {
	d := gputest.Device(t)
	src := make([]byte, 3<<20+5) // not a whole number of pages
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]byte, len(src))
	rs, err := gpu.RegisterHost(d, src)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Unregister()
	rd, err := gpu.RegisterHost(d, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Unregister()
	buf, err := gpu.Alloc[byte](d, len(src))
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := buf.Write(s, 0, src); err != nil {
		t.Fatal(err)
	}
	if err := buf.Read(s, 0, dst); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if dst[i] != src[i] {
			t.Fatalf("byte %d: %d, want %d", i, dst[i], src[i])
		}
	}
	if err := rs.Unregister(); err != nil {
		t.Fatal(err)
	}
	if err := rs.Unregister(); err != nil {
		t.Fatalf("second Unregister: %v", err)
	}
}

// BenchmarkRegisterHost measures whether a whole call could DMA straight
// from the caller's packed batch (Go memory) instead of copying it into
// pinned slots first: for batches of 4 MiB, 20 MiB (1Mi 16-byte keys and
// their offsets) and 64 MiB, the time of cuMemHostRegister and of
// cuMemHostUnregister of the batch, its transfer to the device from the
// registered memory, from the same memory unregistered (the driver
// stages pageable memory itself), and copying it into pinned memory on
// all cores (par.Shared, the point calls' packing) then transferring it
// from there; and the whole of register, transfer, unregister against
// the whole of copy and transfer. Metrics: ms and GB/s of each form
// (host clock, the stream synchronized).
func BenchmarkRegisterHost(b *testing.B) {
	d := gputest.Device(b)
	s, err := d.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, size := range []int{4 << 20, 20 << 20, 64 << 20} {
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(i)
		}
		dev, err := gpu.Alloc[byte](d, size)
		if err != nil {
			b.Fatal(err)
		}
		pin, err := gpu.AllocHost[byte](d, size)
		if err != nil {
			b.Fatal(err)
		}
		workers := runtime.GOMAXPROCS(0)
		copyPinned := func() {
			p := pin.Slice()
			par.Shared().Ranges(size, par.Parts(size, 256<<10, workers), func(_, lo, hi int) { copy(p[lo:hi], src[lo:hi]) })
		}
		write := func(from []byte) {
			if err := dev.Write(s, 0, from); err != nil {
				b.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
		}
		forms := []struct {
			name string
			run  func()
		}{
			{"register+unregister", func() {
				r, err := gpu.RegisterHost(d, src)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Unregister(); err != nil {
					b.Fatal(err)
				}
			}},
			{"register+h2d+unregister", func() {
				r, err := gpu.RegisterHost(d, src)
				if err != nil {
					b.Fatal(err)
				}
				write(src)
				if err := r.Unregister(); err != nil {
					b.Fatal(err)
				}
			}},
			{"h2d-pageable", func() { write(src) }},
			{"copy-pinned", copyPinned},
			{"copy-pinned+h2d", func() { copyPinned(); write(pin.Slice()) }},
			{"h2d-pinned", func() { write(pin.Slice()) }},
		}
		for _, f := range forms {
			b.Run(fmt.Sprintf("MiB=%d/%s", size>>20, f.name), func(b *testing.B) {
				f.run() // first call untimed
				var ts []time.Duration
				for b.Loop() {
					t0 := time.Now()
					f.run()
					ts = append(ts, time.Since(t0))
				}
				med := medianOf(ts)
				b.ReportMetric(med.Seconds()*1e3, "median-ms")
				b.ReportMetric(float64(size)/med.Seconds()/1e9, "GB/s")
			})
		}
		// The registered memory's own transfer rate, registered once.
		b.Run(fmt.Sprintf("MiB=%d/h2d-registered", size>>20), func(b *testing.B) {
			r, err := gpu.RegisterHost(d, src)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Unregister()
			write(src)
			var ts []time.Duration
			for b.Loop() {
				t0 := time.Now()
				write(src)
				ts = append(ts, time.Since(t0))
			}
			med := medianOf(ts)
			b.ReportMetric(med.Seconds()*1e3, "median-ms")
			b.ReportMetric(float64(size)/med.Seconds()/1e9, "GB/s")
		})
		// Registration split: register alone and unregister alone.
		b.Run(fmt.Sprintf("MiB=%d/register-alone", size>>20), func(b *testing.B) {
			var reg, unreg []time.Duration
			for b.Loop() {
				t0 := time.Now()
				r, err := gpu.RegisterHost(d, src)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := r.Unregister(); err != nil {
					b.Fatal(err)
				}
				reg, unreg = append(reg, t1.Sub(t0)), append(unreg, time.Since(t1))
			}
			b.ReportMetric(medianOf(reg).Seconds()*1e3, "register-ms")
			b.ReportMetric(medianOf(unreg).Seconds()*1e3, "unregister-ms")
		})
		dev.Free()
		pin.Free()
	}
}

// medianOf returns the median of ts (0 when empty).
func medianOf(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}
