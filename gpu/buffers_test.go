package gpu_test

import (
	"errors"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestBuffersStickyErrorAndFree checks that a failed allocation in a
// Buffers set makes every later one a no-op returning nil, that Err keeps
// the first failure, and that Free releases exactly what the set holds,
// foreign buffers handed over with Own included.
func TestBuffersStickyErrorAndFree(t *testing.T) {
	d := gputest.Device(t)
	_, total, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	liveBefore, _ := d.Live()
	bs := gpu.NewBuffers(d)
	up := gpu.UploadIn(bs, []uint32{1, 2, 3})
	a := gpu.AllocIn[uint64](bs, 10)
	own, err := gpu.Alloc[byte](d, 64)
	if err != nil {
		t.Fatal(err)
	}
	bs.Own(own)
	if up == nil || a == nil || bs.Err() != nil {
		t.Fatalf("allocations before a failure: %v %v %v", up, a, bs.Err())
	}
	got := make([]uint32, 3)
	if err := up.Read(nil, 0, got); err != nil || got[2] != 3 {
		t.Fatalf("uploaded buffer reads %v, %v", got, err)
	}
	if huge := gpu.AllocIn[byte](bs, int(total*4)); huge != nil {
		t.Fatal("allocating 4x device memory returned a buffer")
	}
	first := bs.Err()
	if !errors.Is(first, gpu.ErrOutOfMemory) {
		t.Fatalf("Err() = %v, want ErrOutOfMemory", first)
	}
	if b := gpu.AllocIn[byte](bs, 8); b != nil || bs.Err() != first {
		t.Fatalf("allocation after a failure: %v, Err() = %v", b, bs.Err())
	}
	if b := gpu.UploadIn(bs, []byte{1}); b != nil {
		t.Fatal("upload after a failure returned a buffer")
	}
	if live, _ := d.Live(); live != liveBefore+3 {
		t.Fatalf("%d allocations live, want %d", live, liveBefore+3)
	}
	if err := bs.Free(); err != nil {
		t.Fatal(err)
	}
	if live, _ := d.Live(); live != liveBefore {
		t.Fatalf("after Free: %d allocations live, want %d", live, liveBefore)
	}
}
