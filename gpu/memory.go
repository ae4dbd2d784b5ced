package gpu

import (
	"fmt"
	"runtime"
	"unsafe"
)

// DevicePtr is a raw device address. Kernels receive buffers as DevicePtr.
type DevicePtr uint64

// Buffer is n elements of T in device memory. T must be a fixed-size type
// without Go pointers (integers, floats, arrays and structs of them). A
// Buffer is freed by Free or by closing its Device.
type Buffer[T any] struct {
	d    *Device
	ptr  uintptr
	n    int
	view bool // a View: does not own the memory
}

func sizeOf[T any]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// Alloc allocates n elements of T on the device. The contents are
// undefined. Running out of device memory returns an error matching
// ErrOutOfMemory, after the device's spare memory (SpareBytes) was
// released and the allocation tried once more. Cost: one cuMemAlloc.
func Alloc[T any](d *Device, n int) (*Buffer[T], error) {
	if n < 0 {
		return nil, fmt.Errorf("gpu: alloc of %d elements", n)
	}
	bytes := int64(n) * int64(sizeOf[T]())
	b := &Buffer[T]{d: d, n: n}
	if bytes == 0 {
		return b, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	var p uintptr
	alloc := func() error {
		return d.do("cuMemAlloc", func() uint32 {
			return call(d.drv.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes))
		})
	}
	err := alloc()
	if err != nil && d.releaseSpareLocked(err) {
		err = alloc() // the spare memory released (spare.go): once more
	}
	if err != nil {
		return nil, fmt.Errorf("gpu: allocating %d bytes on %s: %w", bytes, d, err)
	}
	d.allocs[p] = bytes
	b.ptr = p
	return b, nil
}

// View returns n elements of T starting offBytes into b, sharing b's memory.
// Freeing a view does nothing; it is invalid once b is freed. It panics if
// the view does not fit in b or is misaligned for T.
func View[T, U any](b *Buffer[U], offBytes, n int) *Buffer[T] {
	size := sizeOf[T]()
	if offBytes < 0 || n < 0 || int64(offBytes)+int64(n)*int64(size) > b.Bytes() {
		panic(fmt.Sprintf("gpu: view of %d x %d bytes at %d outside buffer of %d bytes", n, size, offBytes, b.Bytes()))
	}
	if size > 0 && uintptr(offBytes)%uintptr(min(size, 16)) != 0 {
		panic(fmt.Sprintf("gpu: view at byte %d misaligned for %d-byte elements", offBytes, size))
	}
	return &Buffer[T]{d: b.d, ptr: b.ptr + uintptr(offBytes), n: n, view: true}
}

// Len returns the number of elements.
func (b *Buffer[T]) Len() int { return b.n }

// Bytes returns the size in bytes.
func (b *Buffer[T]) Bytes() int64 { return int64(b.n) * int64(sizeOf[T]()) }

// Ptr returns the device address of element 0.
func (b *Buffer[T]) Ptr() DevicePtr { return DevicePtr(b.ptr) }

// PtrAt returns the device address of element i.
func (b *Buffer[T]) PtrAt(i int) DevicePtr {
	return DevicePtr(b.ptr + uintptr(i)*uintptr(sizeOf[T]()))
}

// Device returns the device the buffer lives on.
func (b *Buffer[T]) Device() *Device { return b.d }

// Free releases the memory. Freeing twice is a no-op.
func (b *Buffer[T]) Free() error {
	if b == nil || b.ptr == 0 || b.view {
		return nil
	}
	p := b.ptr
	b.ptr = 0
	return releaseHandle(b.d, b.d.allocs, p, "cuMemFree", b.d.drv.cuMemFree)
}

func (b *Buffer[T]) check(off, n int) error {
	if off < 0 || n < 0 || off+n > b.n {
		return fmt.Errorf("gpu: range [%d,%d) outside buffer of %d elements", off, off+n, b.n)
	}
	return nil
}

// Write copies src to elements [off, off+len(src)) on stream s (nil: the
// legacy default stream, synchronously). From pinned memory (HostBuffer)
// the copy is asynchronous; from Go memory the driver stages it and src may
// be reused when Write returns.
func (b *Buffer[T]) Write(s *Stream, off int, src []T) error {
	if err := b.check(off, len(src)); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	bytes := uintptr(len(src)) * uintptr(sizeOf[T]())
	dst := uintptr(b.PtrAt(off))
	err := b.d.do("cuMemcpyHtoDAsync", func() uint32 {
		r := call(b.d.drv.cuMemcpyHtoDAsync, dst, uintptr(unsafe.Pointer(&src[0])), bytes, s.handle())
		if r == 0 && s == nil {
			r = call(b.d.drv.cuStreamSynchronize, 0)
		}
		return r
	})
	runtime.KeepAlive(src)
	return err
}

// Read copies elements [off, off+len(dst)) into dst on stream s (nil: the
// default stream, synchronously). Into pinned memory the copy is
// asynchronous: synchronize s before reading dst.
func (b *Buffer[T]) Read(s *Stream, off int, dst []T) error {
	if err := b.check(off, len(dst)); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	bytes := uintptr(len(dst)) * uintptr(sizeOf[T]())
	src := uintptr(b.PtrAt(off))
	err := b.d.do("cuMemcpyDtoHAsync", func() uint32 {
		r := call(b.d.drv.cuMemcpyDtoHAsync, uintptr(unsafe.Pointer(&dst[0])), src, bytes, s.handle())
		if r == 0 && s == nil {
			r = call(b.d.drv.cuStreamSynchronize, 0)
		}
		return r
	})
	runtime.KeepAlive(dst)
	return err
}

// CopyFrom copies n elements from src[srcOff:] to b[dstOff:] on stream s.
func (b *Buffer[T]) CopyFrom(s *Stream, dstOff int, src *Buffer[T], srcOff, n int) error {
	if err := b.check(dstOff, n); err != nil {
		return err
	}
	if err := src.check(srcOff, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	bytes := uintptr(n) * uintptr(sizeOf[T]())
	return b.d.do("cuMemcpyDtoDAsync", func() uint32 {
		return call(b.d.drv.cuMemcpyDtoDAsync, uintptr(b.PtrAt(dstOff)), uintptr(src.PtrAt(srcOff)), bytes, s.handle())
	})
}

// FillBytes sets every byte of the buffer to v on stream s.
func (b *Buffer[T]) FillBytes(s *Stream, v byte) error {
	if b.n == 0 {
		return nil
	}
	return b.d.do("cuMemsetD8Async", func() uint32 {
		return call(b.d.drv.cuMemsetD8Async, b.ptr, uintptr(v), uintptr(b.Bytes()), s.handle())
	})
}

// Fill32 sets every 32-bit word of the buffer to v on stream s. The buffer's
// size must be a multiple of 4 bytes.
func (b *Buffer[T]) Fill32(s *Stream, v uint32) error {
	if b.Bytes()%4 != 0 {
		return fmt.Errorf("gpu: Fill32 on a buffer of %d bytes", b.Bytes())
	}
	if b.n == 0 {
		return nil
	}
	return b.d.do("cuMemsetD32Async", func() uint32 {
		return call(b.d.drv.cuMemsetD32Async, b.ptr, uintptr(v), uintptr(b.Bytes()/4), s.handle())
	})
}

// Download allocates a Go slice and copies the whole buffer into it,
// synchronously. Convenient for tests; hot paths use Read with pinned memory.
func (b *Buffer[T]) Download() ([]T, error) {
	out := make([]T, b.n)
	return out, b.Read(nil, 0, out)
}

// Upload allocates a buffer holding a copy of src, synchronously.
func Upload[T any](d *Device, src []T) (*Buffer[T], error) {
	b, err := Alloc[T](d, len(src))
	if err != nil {
		return nil, err
	}
	if err := b.Write(nil, 0, src); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// HostBuffer is n elements of T in page-locked host memory, outside the Go
// heap, visible as a Go slice. Copies between it and the device run
// asynchronously at full PCIe/NVLink speed.
type HostBuffer[T any] struct {
	d    *Device
	ptr  uintptr
	data []T
}

// AllocHost allocates n elements of pinned host memory. Cost: one
// cuMemHostAlloc, which is slow (milliseconds): allocate once and reuse.
func AllocHost[T any](d *Device, n int) (*HostBuffer[T], error) {
	bytes := int64(n) * int64(sizeOf[T]())
	h := &HostBuffer[T]{d: d}
	if bytes == 0 {
		return h, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	var p uintptr
	const portable = 1 // CU_MEMHOSTALLOC_PORTABLE
	err := d.do("cuMemHostAlloc", func() uint32 {
		return call(d.drv.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes), portable)
	})
	if err != nil {
		return nil, fmt.Errorf("gpu: pinning %d host bytes: %w", bytes, err)
	}
	d.hosts[p] = bytes
	h.ptr = p
	h.data = unsafe.Slice((*T)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
	return h, nil
}

// Slice returns the memory as a Go slice; it is invalid after Free.
func (h *HostBuffer[T]) Slice() []T { return h.data }

// Len returns the number of elements.
func (h *HostBuffer[T]) Len() int { return len(h.data) }

// Free releases the pinned memory.
func (h *HostBuffer[T]) Free() error {
	if h == nil || h.ptr == 0 {
		return nil
	}
	p := h.ptr
	h.ptr, h.data = 0, nil
	return releaseHandle(h.d, h.d.hosts, p, "cuMemFreeHost", h.d.drv.cuMemFreeHost)
}
