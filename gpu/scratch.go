package gpu

// Scratch is one device buffer reused across calls and grown with
// headroom: a Pool of one buffer, for code that keeps its temporaries in
// separate fields. Engines use a Pool, which also reserves a batch's
// buffers up front. The zero value holds no buffer. It is not safe for
// concurrent use.
type Scratch[T any] struct{ p *Pool }

// Get returns a buffer of at least n elements (at least 1), allocating n +
// n/8 when the held one is smaller; growing first synchronizes s and frees
// the old buffer. Cost: O(1), or one allocation when it grows.
func (c *Scratch[T]) Get(d *Device, s *Stream, n int) (*Buffer[T], error) {
	if c.p == nil {
		c.p = NewPool(d, s)
	}
	c.p.s = s
	b, err := c.p.grow("", max(n, 1)*sizeOf[T]())
	if err != nil {
		return nil, err
	}
	return View[T](b, 0, b.Len()/sizeOf[T]()), nil
}

// Buf returns the held buffer (nil before the first Get). Cost: O(1).
func (c *Scratch[T]) Buf() *Buffer[T] {
	if c.p == nil || c.p.dev[""] == nil {
		return nil
	}
	b := c.p.dev[""]
	return View[T](b, 0, b.Len()/sizeOf[T]())
}

// Free synchronizes s and releases the held buffer, if any. Cost: one
// synchronization and one free.
func (c *Scratch[T]) Free(s *Stream) error {
	if c.p == nil {
		return nil
	}
	c.p.s = s
	return c.p.Free()
}
