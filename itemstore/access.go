package itemstore

// maxRefs bounds the references Acquire hands out to one item, leaving
// room for Unlink's own.
const maxRefs = ctlRefMask - 1

// Acquire returns a reference to the item at loc if it is Linked, and
// false if loc is out of range, on an unmapped page, or holds no Linked
// item. It sets the item's CLOCK bit. The item may be a different key than
// the caller expects (the index holds stale locations, and chunks are
// reused): callers compare Key. Every successful Acquire must be matched by
// one Release. Cost: a page-table load and a compare-and-swap; no lock.
func (s *Store) Acquire(loc uint32) (Ref, bool) {
	p, idx, ok := s.lookup(loc)
	if !ok {
		return Ref{}, false
	}
	h := p.chunk(idx)
	for {
		ct := h.ctl.Load()
		if ctlState(ct) != stateLinked || ctlRefs(ct) >= maxRefs {
			return Ref{}, false
		}
		if h.ctl.CompareAndSwap(ct, (ct+1)|ctlClock) {
			return Ref{p: p, h: h, loc: loc, gen: ctlGen(ct)}, true
		}
	}
}

// Unlink makes the Linked item at loc with key hash hash Dead: Acquire of
// loc fails from now on, and the chunk is freed when the last reference is
// released (at once if there is none). It returns false, doing nothing,
// when loc holds no Linked item or one with another hash (the index may
// report stale locations). Cost: two compare-and-swaps; the class mutex
// if the chunk is freed.
func (s *Store) Unlink(loc uint32, hash uint64) bool {
	r, ok := s.killMatch(loc, hash, ^uint64(0))
	if ok {
		r.Release()
	}
	return ok
}

// killMatch makes the Linked item at loc whose key hash equals hash in the
// bits of mask (all: Unlink's exact match; 0: any Linked item) Dead, as
// Unlink does, and returns the reference that the same compare-and-swap
// took; the caller releases it (whose release frees the chunk if it is
// the last).
func (s *Store) killMatch(loc uint32, hash, mask uint64) (Ref, bool) {
	p, idx, ok := s.lookup(loc)
	if !ok {
		return Ref{}, false
	}
	h := p.chunk(idx)
	for {
		ct := h.ctl.Load()
		if ctlState(ct) != stateLinked || (h.hash.Load()^hash)&mask != 0 {
			return Ref{}, false
		}
		// The generation in ct makes the swap fail if the chunk was
		// reused (and its hash rewritten) after the loads above. The swap
		// takes a reference, so the chunk is not freed and reused while
		// its size is read.
		if h.ctl.CompareAndSwap(ct, withState(ct, stateDead)&^ctlClock+1) {
			p.forget(h)
			return Ref{p: p, h: h, loc: loc, gen: ctlGen(ct)}, true
		}
	}
}
