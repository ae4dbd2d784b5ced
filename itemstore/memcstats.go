package itemstore

import (
	"strconv"

	"github.com/warpkv/warpkv/kv"
)

// memcached's statistics of the store, in the names and order memcached 1.6
// uses.

func itoa(v int) string         { return strconv.Itoa(v) }
func i64(v int64) string        { return strconv.FormatInt(v, 10) }
func u64(v uint64) string       { return strconv.FormatUint(v, 10) }
func yesNo(b bool) string       { return map[bool]string{true: "yes", false: "no"}[b] }
func ratioStr(r float64) string { return strconv.FormatFloat(r, 'f', 2, 64) }

// SlabStats returns the lines of "stats slabs" for the classes that own a
// page (chunk_size ... free_chunks_end each, prefixed "N:"), then
// active_slabs and total_malloced. Cost: as Classes.
func (s *Store) SlabStats() []kv.Stat {
	var out []kv.Stat
	active := 0
	for _, c := range s.Classes() {
		if c.Pages == 0 {
			continue
		}
		active++
		p := itoa(c.Class) + ":"
		out = append(out,
			kv.Stat{Name: p + "chunk_size", Value: itoa(c.ChunkSize)},
			kv.Stat{Name: p + "chunks_per_page", Value: itoa(c.ChunksPerPage)},
			kv.Stat{Name: p + "total_pages", Value: itoa(c.Pages)},
			kv.Stat{Name: p + "total_chunks", Value: itoa(c.TotalChunks)},
			kv.Stat{Name: p + "used_chunks", Value: itoa(c.UsedChunks)},
			kv.Stat{Name: p + "free_chunks", Value: itoa(c.FreeChunks)},
			kv.Stat{Name: p + "free_chunks_end", Value: itoa(c.FreeChunksEnd)},
		)
	}
	st := s.Stats()
	return append(out, kv.Stat{Name: "active_slabs", Value: itoa(active)},
		kv.Stat{Name: "total_malloced", Value: i64(st.PageBytes)})
}

// ItemStats returns the lines of "stats items" for the classes that hold
// or held items, at clock now: number, age (see sampleAge: the seconds since
// last access of the items the CLOCK sweep takes next, memcached's LRU tail
// age), mem_requested, evicted, evicted_nonzero, evicted_time (the age of
// the last evicted item), outofmemory, reclaimed, expired_unfetched,
// evicted_unfetched. Cost: as Classes, plus a sample of each class's hand.
func (s *Store) ItemStats(now int64) []kv.Stat {
	var out []kv.Stat
	for i, c := range s.Classes() {
		if c.Items == 0 && c.Evictions == 0 && c.Reclaimed == 0 && c.OutOfMemory == 0 {
			continue
		}
		cl := s.classes[i]
		cl.mu.Lock()
		age := max(cl.sampleAge(now), 0)
		cl.mu.Unlock()
		p := "items:" + itoa(c.Class) + ":"
		out = append(out,
			kv.Stat{Name: p + "number", Value: i64(c.Items)},
			kv.Stat{Name: p + "age", Value: i64(age)},
			kv.Stat{Name: p + "mem_requested", Value: i64(c.ItemBytes)},
			kv.Stat{Name: p + "evicted", Value: u64(c.Evictions)},
			kv.Stat{Name: p + "evicted_nonzero", Value: "0"},
			kv.Stat{Name: p + "evicted_time", Value: i64(c.EvictedTime)},
			kv.Stat{Name: p + "outofmemory", Value: u64(c.OutOfMemory)},
			kv.Stat{Name: p + "reclaimed", Value: u64(c.Reclaimed)},
			kv.Stat{Name: p + "expired_unfetched", Value: u64(c.ExpiredUnfetched)},
			kv.Stat{Name: p + "evicted_unfetched", Value: u64(c.EvictedUnfetched)},
		)
	}
	return out
}

// RebalanceStats returns memcached's general statistics about slab
// reassignment: slab_reassign_* (rescues are always 0: items of a moved
// page are evicted, never copied), slabs_moved and slab_global_page_pool
// (pages given back and not mapped again). Cost: O(1).
func (s *Store) RebalanceStats() []kv.Stat {
	st := &s.slabs
	st.mu.Lock()
	running := st.req != nil
	st.mu.Unlock()
	s.pageMu.Lock()
	pool := len(s.freeNums)
	s.pageMu.Unlock()
	return []kv.Stat{
		{Name: "slab_reassign_rescues", Value: "0"},
		{Name: "slab_reassign_chunk_rescues", Value: "0"},
		{Name: "slab_reassign_evictions_nomem", Value: u64(st.evictedNoMem.Load())},
		{Name: "slab_reassign_inline_reclaim", Value: u64(st.reclaimedMoved.Load())},
		{Name: "slab_reassign_busy_items", Value: u64(st.busyPages.Load())},
		{Name: "slab_reassign_busy_deletes", Value: "0"},
		{Name: "slab_reassign_running", Value: map[bool]string{true: "1", false: "0"}[running]},
		{Name: "slabs_moved", Value: u64(st.moved.Load())},
		{Name: "slab_global_page_pool", Value: itoa(pool)},
	}
}

// RebalanceSettings returns the "stats settings" lines of slab
// reassignment: slab_reassign, slab_automove, slab_automove_ratio and
// slab_chunk_max. Cost: O(1).
func (s *Store) RebalanceSettings() []kv.Stat {
	level, ratio := s.Automove()
	return []kv.Stat{
		{Name: "slab_reassign", Value: yesNo(s.slabs.reassign)},
		{Name: "slab_automove", Value: itoa(level)},
		{Name: "slab_automove_ratio", Value: ratioStr(ratio)},
		{Name: "slab_chunk_max", Value: itoa(s.cfg.pageSize / 2)},
	}
}
