package gpu_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestPipelineRoundTrips moves random data up and back down through small
// rings (so that every transfer crosses many chunks and reuses every slot)
// in both directions through one ring and through separate rings, typed
// and as a byte stream, above and below the direct threshold.
func TestPipelineRoundTrips(t *testing.T) {
	d := gputest.Device(t)
	s := gputest.Stream(t, d)
	for _, cfg := range []gpu.PipelineConfig{
		{ChunkBytes: 4096, Chunks: 2, Workers: 3, Grain: 100},
		{ChunkBytes: 1 << 16, Chunks: 4, Direct: 1 << 12, Workers: 8},
		{ChunkBytes: 24, Chunks: 3},
	} {
		up := gpu.NewPipeline(d, cfg)
		down := up
		for _, shared := range []bool{true, false} {
			if !shared {
				down = gpu.NewPipeline(d, cfg)
			}
			for _, n := range []int{1, 3, 511, 512, 513, 5000, 70001} {
				src := make([]uint64, n)
				for i := range src {
					src[i] = rand.Uint64()
				}
				buf, err := gpu.Alloc[uint64](d, n+7)
				if err != nil {
					t.Fatal(err)
				}
				if err := gpu.UploadStaged(up, s, buf, 7, src); err != nil {
					t.Fatal(err)
				}
				got := make([]uint64, n)
				flags := make([]uint8, 8*n)
				if err := errors.Join(gpu.DownloadStaged(down, s, buf, 7, got),
					gpu.DownloadStaged(down, s, gpu.View[uint8](buf, 56, 8*n), 0, flags), down.Drain(), s.Synchronize()); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, src) {
					t.Fatalf("config %+v, shared %v, n %d: words came back changed", cfg, shared, n)
				}
				for i, f := range flags {
					if want := uint8(src[i/8] >> (8 * (i % 8))); f != want {
						t.Fatalf("config %+v, n %d: byte %d = %d, want %d", cfg, n, i, f, want)
					}
				}
				// The byte stream: fill writes position-dependent bytes.
				bytes := gpu.View[byte](buf, 56, 8*n)
				if err := up.UploadFunc(s, bytes, 0, 8*n, func(b []byte, pos int) {
					for i := range b {
						b[i] = byte((pos + i) * 7)
					}
				}); err != nil {
					t.Fatal(err)
				}
				out := make([]byte, 8*n)
				if err := errors.Join(gpu.DownloadStaged(down, s, bytes, 0, out), down.Drain(), s.Synchronize()); err != nil {
					t.Fatal(err)
				}
				for i, b := range out {
					if b != byte(i*7) {
						t.Fatalf("config %+v, n %d: stream byte %d = %d", cfg, n, i, b)
					}
				}
				buf.Free()
			}
			if !shared {
				if err := down.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := up.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPipelineRunChunksOverThreeStreams runs a batch that adds one to
// every word, in chunks, and checks the outputs and that Done sees the
// chunks in order; a failing Check leaves the device buffer unchanged.
func TestPipelineRunChunksOverThreeStreams(t *testing.T) {
	d := gputest.Device(t)
	var ss [3]*gpu.Stream
	for i := range ss {
		s := gputest.Stream(t, d)
		ss[i] = s
	}
	work, in, out := ss[0], ss[1], ss[2]
	m, err := d.Compile("pipeline_test.cu", `extern "C" __global__ void inc(unsigned long long* p, unsigned long long n) {
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	if (i < n) p[i] += 1;
}`)
	if err != nil {
		t.Fatal(err)
	}
	inc, err := m.Function("inc")
	if err != nil {
		t.Fatal(err)
	}
	p := gpu.NewPipeline(d, gpu.PipelineConfig{})
	defer p.Close()
	const n, size = 100000, 7000
	host, err := gpu.AllocHost[uint64](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Free()
	dev, err := gpu.Alloc[uint64](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free()
	src := make([]uint64, n)
	for i := range src {
		src[i] = rand.Uint64()
	}
	for _, c := range []struct {
		chunks, lag int
		inFirst     bool
	}{{1, 2, false}, {(n + size - 1) / size, 2, false}, {(n + size - 1) / size, 1, true}} {
		sz := (n + c.chunks - 1) / c.chunks
		rng := func(k int) (int, int) { return k * sz, min(n, (k+1)*sz) }
		var done []int
		err := p.Run(work, in, out, c.chunks, c.lag, gpu.Steps{
			InFirst: c.inFirst,
			Pack: func(k int) error {
				lo, hi := rng(k)
				copy(host.Slice()[lo:hi], src[lo:hi])
				return nil
			},
			In: func(s *gpu.Stream, k int) error {
				lo, hi := rng(k)
				return dev.Write(s, lo, host.Slice()[lo:hi])
			},
			Work: func(s *gpu.Stream, k int) error {
				lo, hi := rng(k)
				return inc.Launch(s, gpu.D1(gpu.Grid(hi-lo, 256)), gpu.D1(256), 0, gpu.View[uint64](dev, 8*lo, hi-lo), uint64(hi-lo))
			},
			Out: func(s *gpu.Stream, k int) error {
				lo, hi := rng(k)
				return dev.Read(s, lo, host.Slice()[lo:hi])
			},
			Done: func(k int) error {
				lo, hi := rng(k)
				for i := lo; i < hi; i++ {
					if host.Slice()[i] != src[i]+1 {
						t.Fatalf("%+v: word %d = %d, want %d", c, i, host.Slice()[i], src[i]+1)
					}
				}
				done = append(done, k)
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(done) != c.chunks || !slices.IsSorted(done) {
			t.Fatalf("%+v: chunks done %v", c, done)
		}
	}
	refused := errors.New("refused")
	before, err := dev.Download()
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(work, in, out, 3, 2, gpu.Steps{
		In:    func(*gpu.Stream, int) error { return nil },
		Check: func() error { return refused },
		Work: func(s *gpu.Stream, k int) error {
			t.Fatal("work queued after a failed check")
			return nil
		},
		Out: func(*gpu.Stream, int) error { return nil },
	})
	after, err2 := dev.Download()
	if !errors.Is(err, refused) || err2 != nil || !slices.Equal(before, after) {
		t.Fatalf("failed check: %v, %v, buffer changed %v", err, err2, !slices.Equal(before, after))
	}
}

// TestPoolReservesBeforeUse reserves named buffers, takes them as other
// types, grows one, and checks that a reservation beyond the device's
// memory fails with ErrOutOfMemory naming the buffer while the pool keeps
// working.
func TestPoolReservesBeforeUse(t *testing.T) {
	d := gputest.Device(t)
	s := gputest.Stream(t, d)
	p := gpu.NewPool(d, s)
	defer p.Free()
	if err := p.Reserve(gpu.NeedOf[uint64]("keys", 1000), gpu.NeedOf[uint8]("flags", 1000)); err != nil {
		t.Fatal(err)
	}
	k := gpu.Take[uint64](p, "keys", 1000)
	words := gpu.Take[uint32](p, "keys", 2000)
	if k.Ptr() != words.Ptr() || k.Len() != 1000 || words.Len() != 2000 {
		t.Fatalf("takes of one buffer: %v %d, %v %d", k.Ptr(), k.Len(), words.Ptr(), words.Len())
	}
	if err := k.Fill32(s, 7); err != nil {
		t.Fatal(err)
	}
	g, err := gpu.Get[uint64](p, "keys", 5000)
	if err != nil || g.Len() != 5000 {
		t.Fatalf("growing: %v, %v", g, err)
	}
	_, total, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	err = p.Reserve(gpu.Need{Name: "huge", Bytes: int(4 * total)})
	if !errors.Is(err, gpu.ErrOutOfMemory) || !strings.Contains(err.Error(), "huge") {
		t.Fatalf("reserving 4x the device: %v", err)
	}
	if _, err := gpu.Get[uint64](p, "keys", 10); err != nil {
		t.Fatalf("pool after a failed reservation: %v", err)
	}
	h, err := gpu.Host[uint32](p, "pinned", 100)
	if err != nil || len(h) != 100 {
		t.Fatalf("pinned: %d, %v", len(h), err)
	}
	if p.Bytes() < 5000*8 || !slices.Contains(p.Names(), "flags") {
		t.Fatalf("pool holds %d bytes, names %v", p.Bytes(), p.Names())
	}
}
