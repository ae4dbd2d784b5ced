package gpu

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Registered is host memory the caller owns (a Go slice) page-locked for
// the device by RegisterHost: transfers from and into it run at the
// pinned rate, with no staging copy. The memory must stay alive and
// unmoved until Unregister (Go's heap does not move objects; the slice
// must not be a goroutine stack's).
type Registered struct {
	d   *Device
	ptr uintptr
	fn  uintptr // cuMemHostUnregister
	buf any     // keeps the memory alive while registered
}

// RegisterHost page-locks the bytes of b for the device
// (cuMemHostRegister): afterwards Buffer.Write and Read with b or any
// part of it are DMA transfers straight from (into) it. A range of pages
// may be registered once at a time. Cost: the driver pins and maps every
// page of b, a system call whose time grows with b's size (measured on
// the H200 host: BenchmarkRegisterHost); Unregister costs about as much
// again. The driver function is looked up on each call (dlsym).
func RegisterHost[T any](d *Device, b []T) (*Registered, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("gpu: registering an empty host slice")
	}
	bytes := uintptr(len(b)) * uintptr(sizeOf[T]())
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	reg, err := purego.Dlsym(d.drv.handle, "cuMemHostRegister_v2")
	if err != nil {
		return nil, fmt.Errorf("gpu: cuMemHostRegister_v2: %w", err)
	}
	unreg, err := purego.Dlsym(d.drv.handle, "cuMemHostUnregister")
	if err != nil {
		return nil, fmt.Errorf("gpu: cuMemHostUnregister: %w", err)
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	const portable = 1 // CU_MEMHOSTREGISTER_PORTABLE
	if err := d.do("cuMemHostRegister", func() uint32 { return call(reg, p, bytes, portable) }); err != nil {
		return nil, fmt.Errorf("gpu: registering %d host bytes: %w", bytes, err)
	}
	runtime.KeepAlive(b)
	return &Registered{d: d, ptr: p, fn: unreg, buf: b}, nil
}

// Unregister unlocks the memory (cuMemHostUnregister); work queued on
// it must be done. Unregistering twice is a no-op. Cost: the driver
// unpins every page.
func (r *Registered) Unregister() error {
	if r == nil || r.ptr == 0 {
		return nil
	}
	p := r.ptr
	r.ptr = 0
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	err := r.d.do("cuMemHostUnregister", func() uint32 { return call(r.fn, p) })
	r.buf = nil
	if err != nil {
		return fmt.Errorf("gpu: unregistering host memory: %w", err)
	}
	return nil
}
