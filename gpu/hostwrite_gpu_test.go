package gpu_test

import (
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

//go:embed testdata/hostwrite.cu
var hostWriteSrc string

// hostWriteBytes is the bytes each form of BenchmarkHostWrites writes a
// call: a few hundred MB, as a large answer of range queries.
const hostWriteBytes = 256 << 20

// BenchmarkHostWrites measures the device's write bandwidth into pinned
// host memory mapped into its address space (kernel stores crossing the
// bus), against the same bytes stored into device memory and against a
// cuMemcpyDtoHAsync of them into pinned host memory (the copy engine).
// Each form writes hostWriteBytes a call (the kernels' word at byte o is
// a function of o, checked on the host after the last call); the metric
// is GB/s by the device's clock (events around b.N calls). Store forms:
// v4 (16-byte stores, a warp covering 512 consecutive bytes), u64x2 (each
// 16 bytes as two 8-byte stores, as aq_pairs copies a 16-byte key), u64
// and u32 (8- and 4-byte coalesced stores), on grids of SMs*8 blocks of
// 256 threads (grid-stride) and of one thread per word; v4 also on 8 to 66
// blocks (how few SMs keep the bus busy); sparse, one 8-byte word a warp
// (partial writes: a 32nd of the bytes).
func BenchmarkHostWrites(b *testing.B) {
	d := gputest.Device(b)
	gputest.NVRTC(b)
	m, err := d.Compile("hostwrite.cu", hostWriteSrc)
	if err != nil {
		b.Fatal(err)
	}
	s := gputest.Stream(b, d)
	host, err := gpu.AllocMapped[uint64](d, hostWriteBytes/8)
	if err != nil {
		b.Fatal(err)
	}
	defer host.Free()
	dev, err := gpu.Alloc[uint64](d, hostWriteBytes/8)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Free()
	pinned, err := gpu.AllocHost[uint64](d, hostWriteBytes/8)
	if err != nil {
		b.Fatal(err)
	}
	defer pinned.Free()
	t0, err := d.NewEvent()
	if err != nil {
		b.Fatal(err)
	}
	defer t0.Close()
	t1, err := d.NewEvent()
	if err != nil {
		b.Fatal(err)
	}
	defer t1.Close()
	sms := d.Properties().SMs
	timed := func(b *testing.B, bytes int, call func(seed uint64) error) {
		if err := call(1); err != nil { // warm
			b.Fatal(err)
		}
		if err := firstErrOf(s.Synchronize(), t0.Record(s)); err != nil {
			b.Fatal(err)
		}
		n := 0
		for b.Loop() {
			n++
			if err := call(uint64(n) + 1); err != nil {
				b.Fatal(err)
			}
		}
		if err := firstErrOf(t1.Record(s), t1.Synchronize()); err != nil {
			b.Fatal(err)
		}
		el, err := gpu.Elapsed(t0, t1)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(bytes)*float64(n)/el.Seconds()/1e9, "GB/s")
		b.ReportMetric(float64(el)/float64(n)/float64(time.Millisecond), "ms/call")
	}
	type kase struct {
		kernel string
		word   int // bytes a thread stores an iteration
		blocks int // 0: one thread per word
		grid   string
		bytes  int // written a call
	}
	var cases []kase
	for _, k := range []struct {
		name string
		word int
	}{{"hw_v4", 16}, {"hw_u64x2", 16}, {"hw_u64", 8}, {"hw_u32", 4}} {
		cases = append(cases, kase{k.name, k.word, sms * 8, "SMsx8", hostWriteBytes}, kase{k.name, k.word, 0, "words", hostWriteBytes})
	}
	for _, bl := range []int{8, 16, 33, 66} { // few blocks: the SMs a kernel storing to the host holds
		cases = append(cases, kase{"hw_v4", 16, bl, fmt.Sprint(bl), hostWriteBytes})
	}
	// One word a warp: a 32nd of the bytes (each word a partial write).
	cases = append(cases, kase{"hw_sparse", 8, sms * 8, "SMsx8", hostWriteBytes / 32})
	for _, c := range cases {
		f, err := m.Function(c.kernel)
		if err != nil {
			b.Fatal(err)
		}
		blocks := c.blocks
		if blocks == 0 {
			blocks = gpu.Grid(c.bytes/c.word, 256)
			if c.kernel == "hw_sparse" {
				blocks *= 32
			}
		}
		for _, to := range []struct {
			name string
			ptr  gpu.DevicePtr
		}{{"mapped-host", host.Ptr()}, {"device", dev.Ptr()}} {
			if to.name == "device" && (c.kernel == "hw_sparse" || c.grid != "SMsx8" && c.grid != "words") {
				continue
			}
			b.Run(fmt.Sprintf("%s/grid=%s/%s", c.kernel[3:], c.grid, to.name), func(b *testing.B) {
				var last uint64
				timed(b, c.bytes, func(seed uint64) error {
					last = seed
					return f.Launch(s, gpu.D1(blocks), gpu.D1(256), 0, to.ptr, uint64(c.bytes), seed)
				})
				if to.name != "mapped-host" {
					return
				}
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
				h := host.Slice()[:c.bytes/8]
				for _, i := range []int{0, 1, 2, 3, len(h)/2 + 1, len(h) - 1} {
					if want := hostWord(uint64(8*i), last); h[i] != want {
						b.Fatalf("word %d = %#x, want %#x", i, h[i], want)
					}
				}
			})
		}
	}
	b.Run("memcpy-DtoH", func(b *testing.B) {
		timed(b, hostWriteBytes, func(uint64) error { return dev.Read(s, 0, pinned.Slice()) })
	})
}

// hostWord is hostwrite.cu's hw_word: the word the kernels store at byte o.
func hostWord(o, seed uint64) uint64 { return (o ^ seed) * 0x9E3779B97F4A7C15 }

// firstErrOf returns the first non-nil error.
func firstErrOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
