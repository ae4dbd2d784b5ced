package itemstore

// Warm loads the control word of the chunk at each location of locs
// (NotFound and invalid locations are skipped): independent loads whose
// memory misses the processor overlaps, so that the Acquire calls that
// follow, each a compare-and-swap that waits for its own miss, find their
// chunks in the cache. It changes nothing and takes no reference; a chunk
// freed or moved meanwhile is only a wasted load. Cost: a page-table read
// and one load per location.
func (s *Store) Warm(locs []uint32) {
	var sink uint64
	for _, loc := range locs {
		if loc == NotFound {
			continue
		}
		if p, idx, ok := s.lookup(loc); ok {
			sink += p.chunk(idx).ctl.Load()
		}
	}
	if sink == 1 { // uses the loads, so they are kept; almost never true
		s.warmOnes.Add(1)
	}
}
