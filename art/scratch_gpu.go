package art

import (
	"errors"

	"github.com/warpkv/warpkv/gpu"
)

// scratchBuf is one named device buffer of the GPU engine, reused across
// batches and grown with headroom (kept in this one file so that a shared
// scratch pool can replace it).
type scratchBuf[T any] struct{ b *gpu.Buffer[T] }

// get returns a buffer of at least n elements (at least 1), allocating
// n + n/8 when the held one is smaller; growing first synchronizes s and
// frees the old buffer. Cost: O(1), or one allocation when it grows.
func (c *scratchBuf[T]) get(d *gpu.Device, s *gpu.Stream, n int) (*gpu.Buffer[T], error) {
	n = max(n, 1)
	if c.b != nil && c.b.Len() >= n {
		return c.b, nil
	}
	if err := c.free(s); err != nil {
		return nil, err
	}
	b, err := gpu.Alloc[T](d, n+n/8)
	if err != nil {
		return nil, err
	}
	c.b = b
	return b, nil
}

// free synchronizes s and releases the held buffer, if any.
func (c *scratchBuf[T]) free(s *gpu.Stream) error {
	if c.b == nil {
		return nil
	}
	err := errors.Join(s.Synchronize(), c.b.Free())
	c.b = nil
	return err
}
