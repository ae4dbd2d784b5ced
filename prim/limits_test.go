package prim

import (
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// mix64 is limits.cu's SplitMix64 finalizer, for the CPU twin of the
// limits kernels.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// TestLimitsKernelsGPU checks the limits kernels against their CPU twin on
// fresh data: the fill is deterministic and never all zero, the copy is
// exact, and every gather sink word is the XOR of the words its thread read.
func TestLimitsKernelsGPU(t *testing.T) {
	e := testGPUEngine(t)
	if e == nil {
		t.Skip("the limits kernels run only on a GPU")
	}
	d := e.Device()
	const n = 1 << 16 // 16-byte words: 1 MiB
	seed := newRand(t).Uint64()
	src, err := gpu.Alloc[[16]byte](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Free()
	dst, err := gpu.Alloc[[16]byte](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Free()
	if err := e.DevFillRandom16(src, seed); err != nil {
		t.Fatal(err)
	}
	if err := e.DevCopy16(dst, src); err != nil {
		t.Fatal(err)
	}
	sink, err := gpu.Alloc[uint32](d, GatherSinkLen(d))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Free()
	const record, lanes, count = 64, 4, 100_000
	if err := e.DevGather(dst, record, count, seed, sink); err != nil {
		t.Fatal(err)
	}
	if err := e.Synchronize(); err != nil {
		t.Fatal(err)
	}
	table := make([][16]byte, n)
	if err := dst.Read(nil, 0, table); err != nil {
		t.Fatal(err)
	}
	words := func(i int) [4]uint32 {
		var w [4]uint32
		for k := range w {
			b := table[i][4*k:]
			w[k] = uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		}
		return w
	}
	for i := range n {
		a := mix64(seed + 2*uint64(i)*0x9E3779B97F4A7C15)
		b := mix64(seed+(2*uint64(i)+1)*0x9E3779B97F4A7C15) | 1
		want := [4]uint32{uint32(a), uint32(a >> 32), uint32(b), uint32(b >> 32)}
		if got := words(i); got != want {
			t.Fatalf("word %d after fill and copy: %x, want %x", i, got, want)
		}
	}
	got := make([]uint32, GatherSinkLen(d))
	if err := sink.Read(nil, 0, got); err != nil {
		t.Fatal(err)
	}
	mask := uint64(n*16/record) - 1
	groups := uint64(len(got) / lanes)
	for tid := range got {
		var acc uint32
		for j := uint64(tid / lanes); j < count; j += groups {
			w := words(int((mix64(seed^j)&mask)*lanes + uint64(tid%lanes)))
			acc ^= w[0] ^ w[1] ^ w[2] ^ w[3]
		}
		if got[tid] != acc {
			t.Fatalf("gather sink[%d] = %#x, want %#x", tid, got[tid], acc)
		}
	}
}

// TestLimitsArgumentsRejected checks the limits launchers' argument checks,
// which need no kernel.
func TestLimitsArgumentsRejected(t *testing.T) {
	e := testGPUEngine(t)
	if e == nil {
		t.Skip("the limits kernels run only on a GPU")
	}
	d := e.Device()
	a, _ := gpu.Alloc[[16]byte](d, 6)
	defer a.Free()
	b, _ := gpu.Alloc[[16]byte](d, 8)
	defer b.Free()
	sink, _ := gpu.Alloc[uint32](d, 1)
	defer sink.Free()
	for name, err := range map[string]error{
		"copy of unequal lengths":         e.DevCopy16(a, b),
		"gather of 48-byte records":       e.DevGather(b, 48, 1, 0, sink),
		"gather table not a power of two": e.DevGather(a, 32, 1, 0, sink),
		"gather sink too small":           e.DevGather(b, 32, 1, 0, sink),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
