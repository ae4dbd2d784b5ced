package gpu

import "errors"

// Scratch is a device buffer reused across calls and grown with headroom,
// for an engine's per-batch temporaries. The zero value holds no buffer.
// It is not safe for concurrent use.
type Scratch[T any] struct{ b *Buffer[T] }

// Get returns a buffer of at least n elements (at least 1), allocating n +
// n/8 when the held one is smaller; growing first synchronizes s and frees
// the old buffer. Cost: O(1), or one allocation when it grows.
func (c *Scratch[T]) Get(d *Device, s *Stream, n int) (*Buffer[T], error) {
	n = max(n, 1)
	if c.b != nil && c.b.Len() >= n {
		return c.b, nil
	}
	if err := c.Free(s); err != nil {
		return nil, err
	}
	b, err := Alloc[T](d, n+n/8)
	if err != nil {
		return nil, err
	}
	c.b = b
	return b, nil
}

// Buf returns the held buffer (nil before the first Get). Cost: O(1).
func (c *Scratch[T]) Buf() *Buffer[T] { return c.b }

// Free synchronizes s and releases the held buffer, if any. Cost: one
// synchronization and one free.
func (c *Scratch[T]) Free(s *Stream) error {
	if c.b == nil {
		return nil
	}
	err := errors.Join(s.Synchronize(), c.b.Free())
	c.b = nil
	return err
}
