package gpu_test

import (
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestHostArraysGrowKeepAndFree checks that a pinned array keeps its
// memory while a request fits (the same address, its contents kept, its
// capacity a quarter past the first request), moves to a larger
// allocation when one does not (HostArrayKeep copying the elements asked
// for), that an empty request pins nothing, that a DMA lands in it, and
// that Free releases every array and leaves the set usable.
func TestHostArraysGrowKeepAndFree(t *testing.T) {
	d := gputest.Device(t)
	before, _ := d.Live()
	a := gpu.NewHostArrays(d)
	x, err := gpu.HostArray[uint64](a, "x", 100)
	if err != nil {
		t.Fatal(err)
	}
	x[99] = 7
	y, err := gpu.HostArray[uint64](a, "x", 120) // within the quarter of headroom
	if err != nil || &y[0] != &x[0] || y[99] != 7 {
		t.Fatalf("a request within the headroom moved the array (%v)", err)
	}
	if c := gpu.HostArrayCap[uint64](a, "x"); c != 125 {
		t.Fatalf("capacity %d, want 125 (100 and a quarter)", c)
	}
	for i := range y {
		y[i] = uint64(i) + 1
	}
	z, err := gpu.HostArrayKeep[uint64](a, "x", 1000, 90)
	if err != nil || len(z) != 1000 || gpu.HostArrayCap[uint64](a, "x") != 1250 {
		t.Fatalf("growing: %d elements, capacity %d, %v", len(z), gpu.HostArrayCap[uint64](a, "x"), err)
	}
	for i := range 90 {
		if z[i] != uint64(i)+1 {
			t.Fatalf("growing kept element %d = %d, want %d", i, z[i], i+1)
		}
	}
	if e, err := gpu.HostArray[uint64](a, "empty", 0); err != nil || e != nil || gpu.HostArrayCap[uint64](a, "empty") != 0 {
		t.Fatalf("an empty request: %v, capacity %d, %v", e, gpu.HostArrayCap[uint64](a, "empty"), err)
	}
	src, err := gpu.Upload(d, []uint64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Free()
	w, err := gpu.HostArray[uint64](a, "w", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Read(nil, 0, w); err != nil || w[2] != 3 {
		t.Fatalf("DMA into a pinned array: %v %v", w, err)
	}
	if n, _ := d.Live(); n != before+3 {
		t.Fatalf("%d live allocations, want %d (two arrays and a buffer)", n, before+3)
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.Live(); n != before+1 {
		t.Fatalf("%d live allocations after Free, want %d", n, before+1)
	}
	if v, err := gpu.HostArray[byte](a, "x", 10); err != nil || len(v) != 10 {
		t.Fatalf("after Free: %d bytes, %v", len(v), err)
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
}
