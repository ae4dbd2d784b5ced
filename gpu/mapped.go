package gpu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// MappedBuffer is n elements of T in page-locked host memory that kernels
// read and write directly over the bus (zero-copy: cuMemHostAlloc with
// CU_MEMHOSTALLOC_DEVICEMAP), visible as a Go slice on the host and at
// DevicePtr on the device. Small messages between host and device (a
// doorbell a resident kernel polls, a batch it reads once) need no copy and
// no driver call. Device accesses cross the bus: each costs about a
// microsecond of latency, so a kernel should read its inputs once, in
// coalesced loads. A MappedBuffer is freed by Free or by closing its
// Device.
type MappedBuffer[T any] struct {
	d    *Device
	ptr  uintptr
	dev  DevicePtr
	data []T
}

// mappedAPI holds the driver functions MappedBuffer needs beyond lib.go's
// table, resolved on first use.
var mappedAPI struct {
	once                  sync.Once
	cuMemHostGetDevicePtr uintptr
	err                   error
}

func loadMappedAPI(d *Device) error {
	mappedAPI.once.Do(func() {
		for _, name := range []string{"cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer"} {
			if a, err := purego.Dlsym(d.drv.handle, name); err == nil && a != 0 {
				mappedAPI.cuMemHostGetDevicePtr = a
				return
			}
		}
		mappedAPI.err = fmt.Errorf("gpu: CUDA driver library lacks cuMemHostGetDevicePointer: driver too old")
	})
	return mappedAPI.err
}

// AllocMapped allocates n elements of mapped pinned host memory, zeroed.
// Cost: one cuMemHostAlloc (slow: allocate once and reuse) and one
// cuMemHostGetDevicePointer.
func AllocMapped[T any](d *Device, n int) (*MappedBuffer[T], error) {
	if n <= 0 {
		return nil, fmt.Errorf("gpu: mapped allocation of %d elements", n)
	}
	if err := loadMappedAPI(d); err != nil {
		return nil, err
	}
	bytes := int64(n) * int64(sizeOf[T]())
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	const (
		portable  = 0x01 // CU_MEMHOSTALLOC_PORTABLE
		deviceMap = 0x02 // CU_MEMHOSTALLOC_DEVICEMAP
	)
	var p uintptr
	if err := d.do("cuMemHostAlloc", func() uint32 {
		return call(d.drv.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes), portable|deviceMap)
	}); err != nil {
		return nil, fmt.Errorf("gpu: mapping %d pinned host bytes: %w", bytes, err)
	}
	var dp uint64
	if err := d.do("cuMemHostGetDevicePointer", func() uint32 {
		return call(mappedAPI.cuMemHostGetDevicePtr, uintptr(unsafe.Pointer(&dp)), p, 0)
	}); err != nil {
		d.do("cuMemFreeHost", func() uint32 { return call(d.drv.cuMemFreeHost, p) })
		return nil, fmt.Errorf("gpu: device address of mapped memory: %w", err)
	}
	d.hosts[p] = bytes
	data := unsafe.Slice((*T)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
	clear(unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), bytes))
	return &MappedBuffer[T]{d: d, ptr: p, dev: DevicePtr(dp), data: data}, nil
}

// Slice returns the memory as a Go slice; it is invalid after Free.
func (m *MappedBuffer[T]) Slice() []T { return m.data }

// Len returns the number of elements.
func (m *MappedBuffer[T]) Len() int { return len(m.data) }

// Ptr returns the device address of element 0 (so a MappedBuffer can be
// passed to Launch).
func (m *MappedBuffer[T]) Ptr() DevicePtr { return m.dev }

// PtrAt returns the device address of element i.
func (m *MappedBuffer[T]) PtrAt(i int) DevicePtr {
	return m.dev + DevicePtr(uintptr(i)*uintptr(sizeOf[T]()))
}

// Free releases the memory. No kernel may still access it. Freeing twice
// is a no-op.
func (m *MappedBuffer[T]) Free() error {
	if m == nil || m.ptr == 0 {
		return nil
	}
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	p := m.ptr
	m.ptr, m.data = 0, nil
	if _, ok := d.hosts[p]; !ok {
		return nil // freed by Device.Close
	}
	delete(d.hosts, p)
	return d.do("cuMemFreeHost", func() uint32 { return call(d.drv.cuMemFreeHost, p) })
}
