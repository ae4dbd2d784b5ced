package itemstore

// Victim is an item the CLOCK sweep evicted (or reclaimed, expired) to make
// room for a new one. Its chunk is reused at once, so the caller must
// delete (Hash, Loc) from the hash index, and must do so before it indexes
// the new item, whose location may be Loc itself.
type Victim struct {
	Hash uint64 // the evicted item's key hash
	Loc  uint32 // its location
}

const (
	// sweepTurns bounds one sweep to this many turns of the hand over the
	// class's chunks: the first turn clears every CLOCK bit it passes, so
	// a second finds a victim unless every chunk is being written or
	// referenced.
	sweepTurns = 2

	// expiredPeek is how many chunks past an eviction candidate, in its
	// page, the sweep looks at for an expired item to take instead
	// (memcached looks at 5 items at the LRU tail for the same purpose).
	expiredPeek = 8
)

// evict moves the class's CLOCK hand to find a chunk to reuse: it skips
// chunks that are not Linked or are referenced; takes an expired item at
// once; clears a set CLOCK bit (second chance); and takes the first
// unexpired item with a clear bit, unless an expired item lies within
// expiredPeek chunks after it in its page, which it takes instead (the
// hand then stays on the candidate). The chunk returned is Dead and
// unreferenced, owned by the caller; the victim is appended to victims. It
// returns false after sweepTurns turns without a victim. The caller holds
// mu. Cost: one atomic load per chunk inspected, usually a few.
func (c *class) evict(now int64, victims []Victim) (*header, uint32, *page, []Victim, bool) {
	bits := c.s.chunkBits
	for range sweepTurns * c.chunks() {
		hp, idx := c.handPage, c.handIdx
		c.advance()
		p := c.pages[hp]
		h := p.chunk(idx)
		ct := h.ctl.Load()
		if ctlState(ct) != stateLinked || ctlRefs(ct) != 0 {
			continue
		}
		if h.expired(now) {
			if v, ok := c.kill(p, h, ct, p.loc(idx, bits), causeReclaim, now); ok {
				return h, v.Loc, p, append(victims, v), true
			}
			continue
		}
		if ct&ctlClock != 0 {
			h.ctl.And(^uint64(ctlClock))
			continue
		}
		if eh, v, ok := c.peekExpired(p, idx, now); ok {
			c.handPage, c.handIdx = hp, idx
			return eh, v.Loc, p, append(victims, v), true
		}
		if v, ok := c.kill(p, h, ct, p.loc(idx, bits), causeEvict, now); ok {
			return h, v.Loc, p, append(victims, v), true
		}
	}
	return nil, 0, nil, victims, false
}

// advance moves the hand to the next chunk of the class. The caller holds
// mu.
func (c *class) advance() {
	if c.handIdx++; c.handIdx < c.perPage {
		return
	}
	c.handIdx = 0
	if c.handPage++; c.handPage == len(c.pages) {
		c.handPage = 0
	}
}

// peekExpired takes the first expired, Linked, unreferenced item among the
// expiredPeek chunks after chunk idx in page p. The caller holds mu.
func (c *class) peekExpired(p *page, idx int, now int64) (*header, Victim, bool) {
	for j := idx + 1; j <= idx+expiredPeek && j < c.perPage; j++ {
		h := p.chunk(j)
		ct := h.ctl.Load()
		if ctlState(ct) != stateLinked || ctlRefs(ct) != 0 || !h.expired(now) {
			continue
		}
		if v, ok := c.kill(p, h, ct, p.loc(j, c.s.chunkBits), causeReclaim, now); ok {
			return h, v, true
		}
	}
	return nil, Victim{}, false
}

// killCause says why kill takes an item, for the counters.
type killCause uint8

const (
	causeEvict   killCause = iota // the CLOCK sweep evicts an unexpired item
	causeReclaim                  // the sweep reuses an expired item's chunk
	causeMove                     // a page move empties the item's page (evicted, or reclaimed if expired)
)

// kill moves the item at loc in page p from Linked and unreferenced
// (control word ct) to Dead, takes it out of the class's counts (forget)
// and counts why (cause). It fails if the control word changed since ct
// was read (a reader acquired the item, or it was unlinked). The caller
// holds mu, so the chunk cannot be reused meanwhile and its hash is the
// one linked with ct. It is the one item-unlink core of the sweep and of
// page moves; Unlink shares forget.
func (c *class) kill(p *page, h *header, ct uint64, loc uint32, cause killCause, now int64) (Victim, bool) {
	v := Victim{Hash: h.hash.Load(), Loc: loc}
	if !h.ctl.CompareAndSwap(ct, withState(ct, stateDead)&^ctlClock) {
		return Victim{}, false
	}
	p.forget(h)
	unfetched := ct&ctlFetched == 0
	switch {
	case cause == causeMove && h.expired(now):
		c.s.slabs.reclaimedMoved.Add(1)
	case cause == causeMove:
		c.s.slabs.evictedNoMem.Add(1)
	case cause == causeReclaim:
		c.reclaimed.Add(1)
		if unfetched {
			c.expiredUnf.Add(1)
		}
	default:
		c.evictions.Add(1)
		c.evictedTime.Store(max(now-int64(h.atime.Load()), 0))
		if unfetched {
			c.evictedUnf.Add(1)
		}
	}
	return v, true
}

// forget takes an item that just left the Linked state out of the counts
// of its class and of page p. Cost: three atomic additions.
func (p *page) forget(h *header) {
	p.c.items.Add(-1)
	p.c.itemBytes.Add(-h.size())
	p.live.Add(-1)
}
