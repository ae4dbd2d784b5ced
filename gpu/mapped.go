package gpu

import (
	"fmt"
	"unsafe"
)

// MappedBuffer is n elements of T in page-locked host memory that is also
// mapped into the device's address space (zero-copy): the host sees it as
// a Go slice, kernels see it at Ptr. Kernels and the host may use it while
// a kernel runs, which makes it the channel for flags that stop a running
// kernel and for progress counters the host polls. Host accesses to words
// the device writes concurrently must be atomic (sync/atomic on the
// slice's elements); device accesses must be volatile or atomic. Every
// access from the device crosses the bus: keep hot data elsewhere.
type MappedBuffer[T any] struct {
	d    *Device
	ptr  uintptr // host address
	dev  uintptr // device address
	data []T
}

// CU_MEMHOSTALLOC_* flags.
const (
	hostAllocPortable  = 1
	hostAllocDeviceMap = 2
)

// AllocMapped allocates n elements of mapped pinned host memory, zeroed.
// Cost: one cuMemHostAlloc and one cuMemHostGetDevicePointer (milliseconds):
// allocate once and reuse.
func AllocMapped[T any](d *Device, n int) (*MappedBuffer[T], error) {
	m, err := allocMapped[T](d, n)
	if err != nil {
		return nil, err
	}
	clear(m.data)
	return m, nil
}

// allocMapped is AllocMapped without the zeroing (which runs after d.mu
// is released): the memory's contents are unspecified.
func allocMapped[T any](d *Device, n int) (*MappedBuffer[T], error) {
	if n <= 0 {
		return nil, fmt.Errorf("gpu: mapped allocation of %d elements", n)
	}
	bytes := int64(n) * int64(sizeOf[T]())
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	var p, dp uintptr
	err := d.do("cuMemHostAlloc(DEVICEMAP)", func() uint32 {
		return call(d.drv.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes), hostAllocPortable|hostAllocDeviceMap)
	})
	if err != nil {
		return nil, fmt.Errorf("gpu: mapping %d host bytes: %w", bytes, err)
	}
	d.hosts[p] = bytes
	err = d.do("cuMemHostGetDevicePointer", func() uint32 {
		return call(d.drv.cuMemHostGetDevicePointer, uintptr(unsafe.Pointer(&dp)), p, 0)
	})
	if err != nil {
		delete(d.hosts, p)
		d.do("cuMemFreeHost", func() uint32 { return call(d.drv.cuMemFreeHost, p) })
		return nil, fmt.Errorf("gpu: device address of %d mapped host bytes: %w", bytes, err)
	}
	m := &MappedBuffer[T]{d: d, ptr: p, dev: dp}
	m.data = unsafe.Slice((*T)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
	return m, nil
}

// MappedAtLeast returns m when it holds at least n elements, else a new
// mapped buffer of n elements on d (zeroed, AllocMapped), m freed first:
// the memory of small answers that kernels store into the host, kept
// call after call (btree's and art's chunk totals of pipelined ranges
// calls). m may be nil. On failure it returns nil (m freed) and the
// error. Cost: nothing when m is large enough, else a cuMemFreeHost and
// AllocMapped's (milliseconds).
func MappedAtLeast[T any](d *Device, m *MappedBuffer[T], n int) (*MappedBuffer[T], error) {
	if m != nil && m.Len() >= n {
		return m, nil
	}
	if err := m.Free(); err != nil {
		return nil, fmt.Errorf("gpu: freeing mapped memory: %w", err)
	}
	return AllocMapped[T](d, n)
}

// Slice returns the memory as a Go slice; it is invalid after Free.
func (m *MappedBuffer[T]) Slice() []T { return m.data }

// Len returns the number of elements.
func (m *MappedBuffer[T]) Len() int { return len(m.data) }

// Ptr returns the device address of element 0, for kernel arguments.
func (m *MappedBuffer[T]) Ptr() DevicePtr { return DevicePtr(m.dev) }

// PtrAt returns the device address of element i.
func (m *MappedBuffer[T]) PtrAt(i int) DevicePtr {
	return DevicePtr(m.dev + uintptr(i)*uintptr(sizeOf[T]()))
}

// Free releases the memory. Freeing twice is a no-op.
func (m *MappedBuffer[T]) Free() error {
	if m == nil || m.ptr == 0 {
		return nil
	}
	p := m.ptr
	m.ptr, m.dev, m.data = 0, 0, nil
	return releaseHandle(m.d, m.d.hosts, p, "cuMemFreeHost", m.d.drv.cuMemFreeHost)
}

// Done reports whether all work queued on the stream has finished, without
// blocking (cuStreamQuery). An error raised by that work is returned.
func (s *Stream) Done() (bool, error) {
	var r uint32
	err := s.d.do("cuStreamQuery", func() uint32 {
		r = call(s.d.drv.cuStreamQuery, s.h)
		if r == cudaErrNotReady {
			return 0
		}
		return r
	})
	return err == nil && r == 0, err
}
