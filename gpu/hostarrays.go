package gpu

import (
	"errors"
	"fmt"
)

// HostArrays is a set of named pinned host arrays that grow on demand and
// are freed together: the memory of an answer that a caller reuses call
// after call, which the device's DMAs write directly (art's and btree's
// pinned Results). The arrays are also mapped into the device's address
// space (HostArrayPtr), so kernels can store into them. It is not safe
// for concurrent use.
type HostArrays struct {
	d    *Device
	bufs map[string]*MappedBuffer[byte]
}

// NewHostArrays returns an empty set on d. Cost: O(1); nothing is pinned
// until the first HostArray.
func NewHostArrays(d *Device) *HostArrays {
	return &HostArrays{d: d, bufs: map[string]*MappedBuffer[byte]{}}
}

// HostArray returns n elements of T of a's array name, first replacing it
// (freed) by one of n plus a quarter when it is absent or shorter: views
// of the old array (and its HostArrayPtr) are invalid after that, and the
// caller makes sure no transfer or kernel still uses it. A new array's
// contents are unspecified. Cost: nothing when it is large enough, else a
// free and a cuMemHostAlloc of mapped memory (milliseconds).
func HostArray[T any](a *HostArrays, name string, n int) ([]T, error) {
	bytes := n * sizeOf[T]()
	h := a.bufs[name]
	if h == nil || h.Len() < bytes {
		if err := h.Free(); err != nil {
			return nil, fmt.Errorf("gpu: freeing pinned %s: %w", name, err)
		}
		delete(a.bufs, name)
		var err error
		if h, err = allocMapped[byte](a.d, max(1, bytes+bytes/4)); err != nil {
			return nil, fmt.Errorf("gpu: pinned %s of %d bytes: %w", name, bytes, err)
		}
		a.bufs[name] = h
	}
	return viewHost[T](h.Slice(), n), nil
}

// HostArrayPtr returns the device address of element i of a's array
// name viewed as T elements (as HostArray returned it), through which a
// kernel stores into the host memory directly (each store crosses the
// bus); 0 when a has no such array. Valid until the array is replaced or
// freed. Cost: O(1).
func HostArrayPtr[T any](a *HostArrays, name string, i int) DevicePtr {
	h := a.bufs[name]
	if h == nil {
		return 0
	}
	return DevicePtr(uintptr(h.Ptr()) + uintptr(i)*uintptr(sizeOf[T]()))
}

// Free releases every array; the set stays usable (it pins again on the
// next HostArray). Cost: a cuMemFreeHost per array.
func (a *HostArrays) Free() error {
	if a == nil {
		return nil
	}
	var err error
	for name, h := range a.bufs {
		err = errors.Join(err, h.Free())
		delete(a.bufs, name)
	}
	return err
}
