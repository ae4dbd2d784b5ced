package itemstore

import (
	"sync"
	"sync/atomic"
)

// class is one size class: the pages it owns, its free list and CLOCK hand
// (all guarded by mu), and counters read by Stats.
type class struct {
	s       *Store
	id      int // 1-based, as memcached's slab classes
	size    int // chunk size in bytes
	perPage int // chunks per page

	mu       sync.Mutex
	pages    []*page // in mapping order; chunk i of the class is pages[i/perPage] chunk i%perPage
	freeHead uint32  // first free location, NotFound if none; chained through header.cas
	nfree    int     // length of the free list
	bump     *page   // newest page, whose chunks from bumpNext on were never used
	bumpNext int
	handPage int // CLOCK hand: the next chunk the sweep inspects is
	handIdx  int // chunk handIdx of pages[handPage]

	items       atomic.Int64  // linked items
	itemBytes   atomic.Int64  // header, key and value bytes of linked items
	links       atomic.Uint64 // items ever linked
	evictions   atomic.Uint64 // unexpired items evicted by the sweep
	evictedUnf  atomic.Uint64 // ... of which never fetched
	reclaimed   atomic.Uint64 // expired items whose chunk the sweep reused
	expiredUnf  atomic.Uint64 // ... of which never fetched
	outOfMemory atomic.Uint64 // allocations that failed with ErrOutOfMemory
}

// newClass returns an empty class of the store s.
func newClass(s *Store, id, size, perPage int) *class {
	return &class{s: s, id: id, size: size, perPage: perPage, freeHead: NotFound}
}

// reset forgets the class's pages (after Close unmapped them). The caller
// holds mu.
func (c *class) reset() {
	c.pages, c.freeHead, c.nfree, c.bump, c.bumpNext, c.handPage, c.handIdx = nil, NotFound, 0, nil, 0, 0, 0
}

// chunks returns the number of chunks in the class's pages. The caller
// holds mu.
func (c *class) chunks() int { return len(c.pages) * c.perPage }

// takeFree pops a chunk off the free list. The caller holds mu.
func (c *class) takeFree() (*header, uint32, bool) {
	if c.freeHead == NotFound {
		return nil, 0, false
	}
	loc := c.freeHead
	p, idx, _ := c.s.lookup(loc)
	h := p.chunk(idx)
	c.freeHead = uint32(h.cas)
	c.nfree--
	return h, loc, true
}

// takeNew returns a never-used chunk, mapping a new page if the newest is
// used up and the memory limit allows. It returns false, and no error,
// when the limit is reached. The caller holds mu.
func (c *class) takeNew() (*header, uint32, bool, error) {
	if c.bump == nil || c.bumpNext == c.perPage {
		p, err := c.s.newPage(c)
		if p == nil {
			return nil, 0, false, err
		}
		c.pages = append(c.pages, p)
		c.bump, c.bumpNext = p, 0
	}
	idx := c.bumpNext
	c.bumpNext++
	return c.bump.chunk(idx), c.bump.loc(idx, c.s.chunkBits), true, nil
}

// free returns the chunk at loc, Dead with no references or Writing and
// aborted, to the free list. Exactly one goroutine frees a chunk: the one
// whose transition left it unreferenced and not Linked. Cost: the class
// mutex.
func (c *class) free(h *header, loc uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s.closed.Load() {
		return
	}
	h.ctl.Store(ctlFor(ctlGen(h.ctl.Load()), stateFree, 0))
	h.cas = uint64(c.freeHead)
	c.freeHead = loc
	c.nfree++
}
