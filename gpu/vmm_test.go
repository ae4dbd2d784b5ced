package gpu_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// growable returns a Growable of reserve bytes on d, or skips the test
// where the device lacks VMM (fails it under WARPKV_REQUIRE_GPU=1: every
// device the project measures on has it).
func growable(tb testing.TB, d *gpu.Device, reserve int64) *gpu.Growable {
	tb.Helper()
	g, err := gpu.NewGrowable(d, reserve)
	if errors.Is(err, gpu.ErrNoVMM) {
		gputest.Unavailable(tb, err.Error())
	}
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// TestGrowable grows a reserved range in steps, each time checking that
// the address stayed, the bytes written before kept their values, the
// new bytes are usable and Live counts the mapped bytes; growth past the
// reservation fails as out of memory with the contents kept; Free returns
// every byte.
func TestGrowable(t *testing.T) {
	d := gputest.Device(t)
	gran, err := d.VMMGranularity()
	if err != nil {
		gputest.Unavailable(t, err.Error())
	}
	_, before := d.Live()
	g := growable(t, d, 64*gran)
	if g.Reserved() != 64*gran || g.Mapped() != 0 {
		t.Fatalf("reserved %d mapped %d, want %d and 0", g.Reserved(), g.Mapped(), 64*gran)
	}
	base := g.Ptr()
	want := []uint32{}
	for _, bytes := range []int64{1, gran, gran + 1, 5 * gran, 5 * gran, 17*gran - 3, 64 * gran} {
		if err := g.Grow(bytes); err != nil {
			t.Fatalf("Grow(%d): %v", bytes, err)
		}
		if g.Ptr() != base {
			t.Fatalf("address moved from %#x to %#x", base, g.Ptr())
		}
		wantMapped := (bytes + gran - 1) / gran * gran
		if g.Mapped() < wantMapped || g.Mapped()%gran != 0 {
			t.Fatalf("Grow(%d): mapped %d, want %d", bytes, g.Mapped(), wantMapped)
		}
		if _, live := d.Live(); live != before+g.Mapped() {
			t.Fatalf("Live %d bytes, want %d", live, before+g.Mapped())
		}
		n := int(g.Mapped() / 4)
		v := gpu.GrowableView[uint32](g, n)
		got, err := v.Download()
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if got[i] != w {
				t.Fatalf("after Grow(%d): word %d = %d, want %d", bytes, i, got[i], w)
			}
		}
		// Write the new words (every 4099th differs) and keep them.
		for i := len(want); i < n; i++ {
			want = append(want, uint32(i*4099+int(bytes)))
		}
		if err := v.Write(nil, 0, want); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Grow(64*gran + 1); !errors.Is(err, gpu.ErrOutOfMemory) {
		t.Fatalf("Grow past the reservation: %v, want an out-of-memory error", err)
	}
	got, err := gpu.GrowableView[uint32](g, len(want)).Download()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after the failed growth: word %d = %d, want %d", i, got[i], want[i])
		}
	}
	if err := errors.Join(g.Free(), g.Free()); err != nil {
		t.Fatal(err)
	}
	if _, live := d.Live(); live != before {
		t.Fatalf("Live %d bytes after Free, want %d", live, before)
	}
}

// BenchmarkDriverMemCalls times the driver's calls that grow and free
// device memory of 1, 2 and 4 GiB: cuMemAlloc and cuMemFree of a Buffer
// against Growable.Grow (cuMemCreate, cuMemMap, cuMemSetAccess) of the
// same bytes on a reserved range and Growable.Free (unmap, release); and
// an 80 MB upload from Go memory through a pinned ring (an insert's key
// part at 100M keys) alone and beside each call on another goroutine.
// It reports ms of the call, and GB/s of the upload beside it.
func BenchmarkDriverMemCalls(b *testing.B) {
	d := gputest.Device(b)
	if _, err := d.VMMGranularity(); err != nil {
		gputest.Unavailable(b, err.Error())
	}
	s := gputest.Stream(b, d)
	const part = 80_000_000
	src := make([]byte, part)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst, err := gpu.Alloc[byte](d, part)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Free()
	p := gpu.NewPipeline(d, gpu.PipelineConfig{ChunkBytes: 16 << 20, Chunks: 4, Direct: 64 << 10})
	defer p.Close()
	upload := func() (time.Duration, error) {
		t0 := time.Now()
		err := gpu.UploadStagedGrain(p, s, dst, 0, src, 128<<10)
		if err == nil {
			err = s.Synchronize()
		}
		return time.Since(t0), err
	}
	var total uint64
	if _, t, err := d.MemInfo(); err == nil {
		total = t
	}
	// calls times f (one driver call's work, set up by prep and undone by
	// undo, both untimed), alone and beside the upload.
	calls := func(name string, prep func() error, f func() error, undo func() error) {
		b.Run(name, func(b *testing.B) {
			var call, up time.Duration
			for b.Loop() {
				b.StopTimer()
				if err := prep(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				call = time.Since(t0)
				b.StopTimer()
				if err := undo(); err != nil {
					b.Fatal(err)
				}
				if err := prep(); err != nil {
					b.Fatal(err)
				}
				done := make(chan error)
				go func() { done <- f() }()
				dt, err := upload()
				if err = errors.Join(err, <-done, undo()); err != nil {
					b.Fatal(err)
				}
				up = dt
				b.StartTimer()
			}
			b.ReportMetric(float64(call)/1e6, "ms/op-call")
			b.ReportMetric(part/up.Seconds()/1e9, "upload-beside-GB/s")
		})
	}
	b.Run("upload,alone", func(b *testing.B) {
		var last time.Duration
		for b.Loop() {
			dt, err := upload()
			if err != nil {
				b.Fatal(err)
			}
			last = dt
		}
		b.ReportMetric(part/last.Seconds()/1e9, "GB/s")
	})
	none := func() error { return nil }
	for _, gb := range []int64{1, 2, 4} {
		n := gb << 30
		var buf *gpu.Buffer[byte]
		var g *gpu.Growable
		calls(fmt.Sprintf("cuMemAlloc,GB=%d", gb), none,
			func() (err error) { buf, err = gpu.Alloc[byte](d, int(n)); return err },
			func() error { return buf.Free() })
		calls(fmt.Sprintf("cuMemFree,GB=%d", gb),
			func() (err error) { buf, err = gpu.Alloc[byte](d, int(n)); return err },
			func() error { return buf.Free() }, none)
		reserve := max(int64(total), 2*n)
		calls(fmt.Sprintf("grow,GB=%d", gb),
			func() (err error) { g, err = gpu.NewGrowable(d, reserve); return err },
			func() error { return g.Grow(n) },
			func() error { return g.Free() })
		// Growth on a range already mapped as far as n: the second n
		// bytes (the case of a pool that grows once more).
		calls(fmt.Sprintf("grow,mapped=%dGB,GB=%d", gb, gb),
			func() (err error) {
				if g, err = gpu.NewGrowable(d, reserve); err == nil {
					err = g.Grow(n)
				}
				return err
			},
			func() error { return g.Grow(2 * n) },
			func() error { return g.Free() })
		calls(fmt.Sprintf("growableFree,GB=%d", gb),
			func() (err error) {
				if g, err = gpu.NewGrowable(d, reserve); err == nil {
					err = g.Grow(n)
				}
				return err
			},
			func() error { return g.Free() }, none)
	}
}

// TestCloseWhileGrowing closes a device while another goroutine grows a
// Growable on it one granule at a time (as art's growAhead grows pools
// beside the caller): in round k of 12 Close comes once k growths have
// succeeded, so that it lands while the goroutine is in the driver's
// calls of the next (round 0: before the first). Every Grow must either
// succeed or be refused as closed (none may map into a released range),
// Close must succeed, and once both are done nothing may be left mapped.
func TestCloseWhileGrowing(t *testing.T) {
	gputest.Device(t) // skip or fail consistently
	for round := range 12 {
		d, err := gpu.Open(0)
		if err != nil {
			t.Fatal(err)
		}
		gran, err := d.VMMGranularity()
		if err != nil {
			d.Close()
			gputest.Unavailable(t, err.Error())
		}
		g := growable(t, d, 4096*gran)
		var grows atomic.Int64
		grown := make(chan error, 1)
		go func() {
			for n := int64(1); ; n++ {
				if err := g.Grow(n * gran); err != nil {
					grown <- err
					return
				}
				grows.Add(1)
			}
		}()
		for grows.Load() < int64(round) && len(grown) == 0 {
			runtime.Gosched()
		}
		if err := d.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		err = <-grown
		if !strings.Contains(err.Error(), "is closed") {
			t.Fatalf("round %d: after %d growths a Grow failed but not as closed: %v", round, grows.Load(), err)
		}
		if m := g.Mapped(); m != 0 {
			t.Fatalf("round %d: %d bytes mapped after Close", round, m)
		}
		if err := g.Free(); err != nil {
			t.Fatalf("round %d: Free after Close: %v", round, err)
		}
	}
}
