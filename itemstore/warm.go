package itemstore

import (
	"sync/atomic"
	"unsafe"
)

// warmSpan is how much of a chunk Warm loads: the header, the key and the
// start of the value (four cache lines).
const warmSpan = 256

// Warm loads the cache lines of the chunk at each location of locs, up to
// warmSpan bytes of it (NotFound and invalid locations are skipped):
// independent loads whose memory misses the processor overlaps, so that
// the Acquire calls that follow, each a compare-and-swap that waits for
// its own miss, and the copies of the values find their chunks in the
// cache. It changes nothing and takes no reference; a chunk freed or
// reused meanwhile is only a wasted load. Cost: a page-table read and a
// load per cache line of each location, their misses overlapped.
func (s *Store) Warm(locs []uint32) {
	var sink uint64
	for _, loc := range locs {
		if loc == NotFound {
			continue
		}
		p, idx, ok := s.lookup(loc)
		if !ok {
			continue
		}
		h := p.chunk(idx)
		sink += h.ctl.Load()
		span := min(p.c.size, warmSpan) - 8 // chunks are 8-byte aligned, their sizes multiples of 8
		for off := 64; off < span; off += 64 {
			sink += (*atomic.Uint64)(unsafe.Add(unsafe.Pointer(h), off)).Load()
		}
		sink += (*atomic.Uint64)(unsafe.Add(unsafe.Pointer(h), span)).Load()
	}
	if sink == 1 { // uses the loads, so they are kept; almost never true
		s.warmOnes.Add(1)
	}
}
