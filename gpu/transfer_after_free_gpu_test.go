package gpu_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// afterFreeBytes is the device memory BenchmarkTransferAfterFree frees
// before each timed copy (about what a rebuild of a 100M-key CuART tree
// frees), and afterFreeCopy the copy it times (a CuART insert's 10M
// 16-byte keys).
const (
	afterFreeBytes = 4 << 30
	afterFreeCopy  = 160 << 20
)

// BenchmarkTransferAfterFree times a pinned host-to-device copy of
// afterFreeCopy bytes right after afterFreeBytes of device memory were
// written and freed, and after idle gaps. It showed why CuART's insert ran
// about 20% slower right after a 100M-key build: the driver clears the
// memory it gets back with the copy engines, and a copy beside that runs
// at half speed for 10-20 ms (H200, 2026-11-30: 28-29 GB/s after a free,
// 5 ms later too, against 55 GB/s; BENCHMARKS.md "Spare device memory").
// Freed kinds: none (the reference), a buffer (cuMemFree), a Growable
// (unmapped and kept as the device's spare memory, spare.go) and a
// Growable with no spare memory kept (cuMemRelease, as before). The
// metric is GB/s of the copy by the host's clock, the copy synchronized;
// the allocation, its fill, the free and the gap are not in it (ns/op
// counts the whole iteration).
func BenchmarkTransferAfterFree(b *testing.B) {
	d := gputest.Device(b)
	s := gputest.Stream(b, d)
	host, err := gpu.AllocHost[byte](d, afterFreeCopy)
	if err != nil {
		b.Fatal(err)
	}
	defer host.Free()
	dst, err := gpu.Alloc[byte](d, afterFreeCopy)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Free()
	free := map[string]func() error{
		"none": func() error { return nil },
		"buffer": func() error {
			buf, err := gpu.Alloc[byte](d, afterFreeBytes)
			if err != nil {
				return err
			}
			if err := buf.FillBytes(s, 1); err != nil {
				return err
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
			return buf.Free()
		},
		"growable": func() error {
			g, err := gpu.NewGrowable(d, afterFreeBytes)
			if err != nil {
				return err
			}
			if err := g.Grow(afterFreeBytes); err != nil {
				return err
			}
			if err := gpu.GrowableView[byte](g, afterFreeBytes).FillBytes(s, 1); err != nil {
				return err
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
			return g.Free()
		},
	}
	free["growable,nospare"] = func() error {
		if err := d.SetSpareLimit(0); err != nil {
			return err
		}
		return errors.Join(free["growable"](), d.SetSpareLimit(-1))
	}
	for _, kind := range []string{"none", "buffer", "growable", "growable,nospare"} {
		for _, gap := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond} {
			b.Run(fmt.Sprintf("freed=%s/gap=%v", kind, gap), func(b *testing.B) {
				var copied time.Duration
				for range b.N {
					if err := free[kind](); err != nil {
						b.Fatal(err)
					}
					time.Sleep(gap)
					t0 := time.Now()
					if err := dst.Write(s, 0, host.Slice()); err != nil {
						b.Fatal(err)
					}
					if err := s.Synchronize(); err != nil {
						b.Fatal(err)
					}
					copied += time.Since(t0)
				}
				b.ReportMetric(float64(afterFreeCopy)*float64(b.N)/copied.Seconds()/1e9, "GB/s")
				b.ReportMetric(copied.Seconds()*1e3/float64(b.N), "copy-ms")
			})
		}
	}
}
