package itemstore

// Memory held outside the pages: the server keeps half-received values in
// read buffers, and counts them inside the memory limit through Hold, as
// memcached, which receives a value into the item it allocated for it,
// counts them inside -m. Held bytes take whole pages from the limit: while
// held pages plus mapped pages exceed it, the next Allocs give pages back
// (evicting their items, from the classes with the oldest items), one page
// per call, as after a lowered SetMemoryLimit.

// Hold takes n bytes of the memory limit for memory the caller holds
// outside the store, rounded with the bytes already held up to whole
// pages, and reports whether it could: it refuses, changing nothing, when
// the held pages would leave the store fewer than an eighth of the limit
// (at least one page). Every successful Hold must be matched by Unhold of
// the same bytes. Cost: the page mutex; at times a page given back by a
// later Alloc.
func (s *Store) Hold(n int64) bool {
	ps := int64(s.cfg.pageSize)
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	held := s.held + n
	need := (held + ps - 1) / ps
	if need > s.heldPages {
		limit := s.maxPages.Load()
		if need > limit-max(limit/8, 1) {
			return false
		}
		s.heldPages = need
		if int64(s.npages) > s.pageCap() {
			s.slabs.work.Store(true)
		}
	}
	s.held = held
	return true
}

// Unhold returns n bytes taken by Hold; a page they no longer fill goes
// back to the store's limit at once. Cost: the page mutex.
func (s *Store) Unhold(n int64) {
	ps := int64(s.cfg.pageSize)
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	s.held = max(s.held-n, 0)
	s.heldPages = (s.held + ps - 1) / ps
}

// Held returns the bytes taken by Hold and not yet returned.
func (s *Store) Held() int64 {
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	return s.held
}

// pageCap is the most pages the classes may have mapped: the memory limit
// less the pages held (Hold). The caller holds pageMu.
func (s *Store) pageCap() int64 { return s.maxPages.Load() - s.heldPages }
