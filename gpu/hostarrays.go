package gpu

import (
	"errors"
	"fmt"
)

// HostArrays is a set of named pinned host arrays that grow on demand and
// are freed together: the memory of an answer that a caller reuses call
// after call, which the device's DMAs write directly (art's and btree's
// pinned Results). It is not safe for concurrent use.
type HostArrays struct {
	d    *Device
	bufs map[string]*HostBuffer[byte]
}

// NewHostArrays returns an empty set on d. Cost: O(1); nothing is pinned
// until the first HostArray.
func NewHostArrays(d *Device) *HostArrays {
	return &HostArrays{d: d, bufs: map[string]*HostBuffer[byte]{}}
}

// HostArray returns n elements of T of a's array name, first replacing it
// (freed) by one of n plus a quarter when it is absent or shorter: views
// of the old array are invalid after that, and the caller makes sure no
// transfer still uses it. Cost: nothing when it is large enough, else a
// free and a cuMemHostAlloc (milliseconds).
func HostArray[T any](a *HostArrays, name string, n int) ([]T, error) {
	bytes := n * sizeOf[T]()
	h := a.bufs[name]
	if h == nil || h.Len() < bytes {
		if err := h.Free(); err != nil {
			return nil, fmt.Errorf("gpu: freeing pinned %s: %w", name, err)
		}
		delete(a.bufs, name)
		var err error
		if h, err = AllocHost[byte](a.d, max(1, bytes+bytes/4)); err != nil {
			return nil, fmt.Errorf("gpu: pinned %s of %d bytes: %w", name, bytes, err)
		}
		a.bufs[name] = h
	}
	return viewHost[T](h.Slice(), n), nil
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
