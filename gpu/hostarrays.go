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
// transfer still uses it. A new array's contents are unspecified. n == 0
// returns nil and pins nothing. Cost: nothing when it is large enough,
// else a free and a cuMemHostAlloc (milliseconds).
func HostArray[T any](a *HostArrays, name string, n int) ([]T, error) {
	return HostArrayKeep[T](a, name, n, 0)
}

// HostArrayKeep is HostArray, but when it replaces the array it first
// copies the old array's first keep elements (keep <= n, and at most the
// old array's length) into the new one, then frees the old: views of the
// old array are invalid after that, and the caller makes sure no transfer
// still uses it. Cost: HostArray's, plus one host copy of keep elements
// when it replaces the array (the old and the new one are then pinned
// together for the copy).
func HostArrayKeep[T any](a *HostArrays, name string, n, keep int) ([]T, error) {
	if n == 0 {
		return nil, nil
	}
	size := sizeOf[T]()
	bytes := n * size
	h := a.bufs[name]
	if h == nil || h.Len() < bytes {
		keepBytes := 0
		if h != nil {
			keepBytes = min(keep*size, h.Len())
		}
		if keepBytes == 0 { // free first: the old and new arrays are never pinned together
			if err := h.Free(); err != nil {
				return nil, fmt.Errorf("gpu: freeing pinned %s: %w", name, err)
			}
			delete(a.bufs, name)
		}
		nh, err := AllocHost[byte](a.d, bytes+bytes/4)
		if err != nil {
			return nil, fmt.Errorf("gpu: pinned %s of %d bytes: %w", name, bytes, err)
		}
		if keepBytes > 0 {
			copy(nh.Slice(), h.Slice()[:keepBytes])
			if err := h.Free(); err != nil {
				return nil, errors.Join(fmt.Errorf("gpu: freeing pinned %s: %w", name, err), nh.Free())
			}
		}
		h = nh
		a.bufs[name] = h
	}
	return viewHost[T](h.Slice(), n), nil
}

// HostArrayCap returns the elements of T that a's array name holds: the
// most that HostArray returns without replacing it (0 when a is nil or
// has no such array). Cost: O(1).
func HostArrayCap[T any](a *HostArrays, name string) int {
	if a == nil {
		return 0
	}
	if h := a.bufs[name]; h != nil {
		return h.Len() / sizeOf[T]()
	}
	return 0
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
