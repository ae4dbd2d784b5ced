package itemstore

import "github.com/warpkv/warpkv/kv"

// DumpItem describes an item to Dump's callback.
type DumpItem struct {
	Key        []byte // valid only during the call
	Hash       uint64
	ValueLen   int
	Flags      uint32 // client flags
	Exptime    int64  // absolute unix seconds, 0 = never
	CAS        uint64
	LastAccess int64 // unix seconds
	Fetched    bool  // read since it was stored (Ref.Touch)
	Meta       kv.ItemMeta
}

// Dump calls fn for every linked item of class (numbered from 1), page by
// page in the class's order, until fn returns false. Items linked or unlinked during the walk may or may not
// be seen. It is memcached's "stats cachedump": a debugging aid, not a
// snapshot. Cost: the class lock held for one page at a time, one atomic
// load per chunk.
func (s *Store) Dump(class int, fn func(DumpItem) bool) {
	if class < 1 || class > len(s.classes) {
		return
	}
	c := s.classes[class-1]
	for pi := 0; ; pi++ {
		c.mu.Lock()
		if pi >= len(c.pages) || s.closed.Load() {
			c.mu.Unlock()
			return
		}
		p := c.pages[pi]
		// The class lock keeps every chunk of the page from being reused:
		// a linked item's key stays intact while it is held, even if the
		// item is unlinked meanwhile.
		for idx := range c.perPage {
			h := p.chunk(idx)
			ct := h.ctl.Load()
			if ctlState(ct) != stateLinked {
				continue
			}
			it := DumpItem{Key: h.key(), Hash: h.hash.Load(), ValueLen: int(h.vlen), Flags: h.flags, Exptime: h.exptime.Load(),
				CAS: h.cas, LastAccess: int64(h.atime.Load()), Fetched: ct&ctlFetched != 0, Meta: ctlMeta(ct)}
			if !fn(it) {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
	}
}
