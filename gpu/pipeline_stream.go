package gpu

import "fmt"

// StreamOut calls fn(k, elems) for k = 0..n-1 in order, with elems the
// elements [lo, hi) = span(k) of src in a pinned chunk of p's ring, valid
// during that call only (fn must not keep them): while fn reads one
// span, the DMAs of the next spans (up to the ring's chunks less one)
// run. Nothing is copied on the host, so a consumer that reads each word
// once (a decoder) reads the device's words at the link's speed without
// a pass through Go memory first. Each span must fit a chunk; a span
// smaller than Direct bytes, and every span where the ring cannot be
// pinned, is read synchronously into one Go buffer instead. Downloads
// pending from DownloadStaged are completed first. fn's error stops the
// stream and is returned as it is; the DMAs already queued complete on s
// (Close or the next take waits for them). Cost: the transfers, one
// synchronization per span.
func StreamOut[T any](p *Pipeline, s *Stream, src *Buffer[T], n int, span func(k int) (lo, hi int), fn func(k int, elems []T) error) error {
	if n <= 0 {
		return nil
	}
	staged := p.Staged()
	if staged {
		if err := p.Drain(); err != nil {
			return err
		}
	}
	var plain []T
	read := func(k int, pin []byte) ([]T, error) {
		lo, hi := span(k)
		if err := src.check(lo, hi-lo); err != nil {
			return nil, fmt.Errorf("gpu: stream: span %d: %w", k, err)
		}
		if pin == nil {
			if cap(plain) < hi-lo {
				plain = make([]T, hi-lo)
			}
			return plain[:hi-lo], src.Read(nil, lo, plain[:hi-lo])
		}
		if hi-lo > perChunk[T](p) {
			return nil, fmt.Errorf("gpu: stream: span %d of %d elements, chunks of %d", k, hi-lo, perChunk[T](p))
		}
		dst := viewHost[T](pin, hi-lo)
		return dst, src.Read(s, lo, dst)
	}
	direct := func(k int) bool {
		lo, hi := span(k)
		return !staged || (hi-lo)*sizeOf[T]() < p.cfg.Direct
	}
	return streamRing(p, s, n, direct, read, fn)
}

// streamRing is StreamOut's order over p's ring (tests give it a ring of
// Go memory): span k is read into a chunk (read with its pinned bytes:
// the DMA queued on s) once the chunk's earlier copy has finished, up to
// len(p.slots)-1 spans ahead of the one fn gets; fn(k) runs after span
// k's chunk's event. A direct span is read (read with nil: a
// synchronous copy) at its turn. Its bookkeeping is one entry per span in
// flight, not per span.
func streamRing[T any](p *Pipeline, s *Stream, n int, direct func(k int) bool, read func(k int, pin []byte) ([]T, error), fn func(k int, elems []T) error) error {
	type queuedSpan struct {
		slot  int // -1: not queued (a direct span)
		elems []T
	}
	ahead := max(len(p.slots)-1, 0)
	// Spans k..k+ahead are queued at most: a ring of ahead+1 entries,
	// span j's at j%len(queued).
	queued := make([]queuedSpan, min(ahead+1, n))
	next := 0 // the next span to queue
	for k := range n {
		for ; next < n && next <= k+ahead; next++ {
			q := &queued[next%len(queued)]
			q.slot = -1
			if direct(next) {
				continue
			}
			i, pin, err := p.take()
			if err != nil {
				return err
			}
			elems, err := read(next, pin)
			if err != nil {
				return err
			}
			if err := p.queued(i, s); err != nil {
				return err
			}
			*q = queuedSpan{i, elems}
		}
		var elems []T
		if q := queued[k%len(queued)]; q.slot >= 0 {
			sl := &p.slots[q.slot]
			if err := sl.ev.Synchronize(); err != nil {
				return err
			}
			sl.busy = false
			elems = q.elems
		} else {
			var err error
			if elems, err = read(k, nil); err != nil {
				return err
			}
		}
		if err := fn(k, elems); err != nil {
			return err
		}
	}
	return nil
}
