package gpu

import (
	"errors"
	"fmt"
)

// Buffers is a set of device buffers allocated together, with a sticky
// error: once one allocation or upload has failed, every later one does
// nothing and returns nil, and Err reports the first failure. A sequence of
// allocations thus needs one error check, after the last of them. Free
// releases every buffer of the set. A Buffers is used by one goroutine.
type Buffers struct {
	d     *Device
	err   error
	owned []interface{ Free() error }
}

// NewBuffers returns an empty set of buffers on d. Cost: nothing on the
// device.
func NewBuffers(d *Device) *Buffers { return &Buffers{d: d} }

// Err returns the first failure of an allocation or upload in the set, or
// nil.
func (bs *Buffers) Err() error { return bs.err }

// Free releases every buffer the set allocated and empties it; it returns
// the errors of the releases, joined. The sticky error is kept.
func (bs *Buffers) Free() error {
	var err error
	for _, b := range bs.owned {
		err = errors.Join(err, b.Free())
	}
	bs.owned = nil
	return err
}

// AllocIn allocates a device buffer of n elements (at least one) in bs and
// returns it, or nil once bs holds an error. Cost: one cuMemAlloc.
func AllocIn[T any](bs *Buffers, n int) *Buffer[T] {
	if bs.err != nil {
		return nil
	}
	b, err := Alloc[T](bs.d, max(n, 1))
	if err != nil {
		bs.err = fmt.Errorf("allocating %d elements: %w", n, err)
		return nil
	}
	bs.owned = append(bs.owned, b)
	return b
}

// UploadIn copies host into a new device buffer in bs and returns it, or
// nil once bs holds an error. Cost: one cuMemAlloc and one synchronous
// copy of len(host) elements.
func UploadIn[T any](bs *Buffers, host []T) *Buffer[T] {
	if bs.err != nil {
		return nil
	}
	b, err := Upload(bs.d, host)
	if err != nil {
		bs.err = fmt.Errorf("uploading %d elements: %w", len(host), err)
		return nil
	}
	bs.owned = append(bs.owned, b)
	return b
}

// Own adds b, allocated elsewhere (a scratch set of an engine, say), to the
// set, so that Free releases it with the rest.
func (bs *Buffers) Own(b interface{ Free() error }) { bs.owned = append(bs.owned, b) }
