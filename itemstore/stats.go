package itemstore

// ClassStats describes one size class, with what memcached's `stats slabs`
// and `stats items` report per class.
type ClassStats struct {
	Class         int // class number, from 1
	ChunkSize     int // bytes per chunk, header included
	ChunksPerPage int
	Pages         int   // pages the class owns
	TotalChunks   int   // Pages * ChunksPerPage
	UsedChunks    int   // chunks being written, linked, or unlinked but still referenced
	FreeChunks    int   // chunks on the free list or never used
	FreeChunksEnd int   // never-used chunks at the end of the newest page
	Items         int64 // linked items
	ItemBytes     int64 // header, key and value bytes of linked items (memcached mem_requested)

	Links            uint64 // items ever linked (memcached total_items)
	Evictions        uint64 // unexpired items evicted to make room
	EvictedUnfetched uint64 // evicted items never touched
	EvictedTime      int64  // seconds between the last access and the eviction of the last evicted item
	Reclaimed        uint64 // expired items whose chunk was reused
	ExpiredUnfetched uint64 // reclaimed items never touched
	OutOfMemory      uint64 // allocations refused with ErrOutOfMemory
}

// Stats are the store's totals, with what memcached's `stats` reports about
// memory.
type Stats struct {
	MemoryLimit   int64 // cap on page bytes (memcached limit_maxbytes)
	PageSize      int
	ItemSizeMax   int
	MaxPages      int   // MemoryLimit / PageSize
	Pages         int   // pages mapped
	PageBytes     int64 // Pages * PageSize (memcached total_malloced)
	Classes       int   // number of size classes
	ActiveClasses int   // classes owning a page (memcached active_slabs)

	Items     int64 // linked items (memcached curr_items)
	ItemBytes int64 // header, key and value bytes of linked items (memcached bytes)

	Links            uint64 // items ever linked (memcached total_items)
	Evictions        uint64
	EvictedUnfetched uint64
	Reclaimed        uint64
	ExpiredUnfetched uint64
	OutOfMemory      uint64
}

// Classes returns the statistics of every size class, smallest chunks
// first. Counters are read one by one while the store runs, so they are
// each exact but not a snapshot of one instant. Cost: each class mutex in
// turn.
func (s *Store) Classes() []ClassStats {
	out := make([]ClassStats, len(s.classes))
	for i, c := range s.classes {
		out[i] = c.stats()
	}
	return out
}

// stats returns the class's statistics.
func (c *class) stats() ClassStats {
	c.mu.Lock()
	pages, nfree := len(c.pages), c.nfree
	end := 0
	if c.bump != nil {
		end = c.perPage - c.bumpNext
	}
	free := nfree + end + len(c.fresh)*c.perPage // pages moved in and not begun are never used too
	c.mu.Unlock()
	total := pages * c.perPage
	return ClassStats{
		Class:            c.id,
		ChunkSize:        c.size,
		ChunksPerPage:    c.perPage,
		Pages:            pages,
		TotalChunks:      total,
		UsedChunks:       total - free,
		FreeChunks:       free,
		FreeChunksEnd:    end,
		Items:            c.items.Load(),
		ItemBytes:        c.itemBytes.Load(),
		Links:            c.links.Load(),
		Evictions:        c.evictions.Load(),
		EvictedUnfetched: c.evictedUnf.Load(),
		EvictedTime:      c.evictedTime.Load(),
		Reclaimed:        c.reclaimed.Load(),
		ExpiredUnfetched: c.expiredUnf.Load(),
		OutOfMemory:      c.outOfMemory.Load(),
	}
}

// Stats returns the store's totals: the sums of Classes and the memory
// figures. Cost: as Classes.
func (s *Store) Stats() Stats {
	pages := int(s.mapped.Load())
	st := Stats{
		MemoryLimit: s.MemoryLimit(),
		PageSize:    s.cfg.pageSize,
		ItemSizeMax: s.cfg.itemSizeMax,
		MaxPages:    int(s.maxPages.Load()),
		Pages:       pages,
		PageBytes:   int64(pages) * int64(s.cfg.pageSize),
		Classes:     len(s.classes),
	}
	for _, c := range s.Classes() {
		if c.Pages > 0 {
			st.ActiveClasses++
		}
		st.Items += c.Items
		st.ItemBytes += c.ItemBytes
		st.Links += c.Links
		st.Evictions += c.Evictions
		st.EvictedUnfetched += c.EvictedUnfetched
		st.Reclaimed += c.Reclaimed
		st.ExpiredUnfetched += c.ExpiredUnfetched
		st.OutOfMemory += c.OutOfMemory
	}
	return st
}
