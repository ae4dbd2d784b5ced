package itemstore

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// class is one size class: the pages it owns, its free list and CLOCK hand
// (all guarded by mu), and counters read by Stats.
//
// The free-list invariant: every location on c's free list is a Free
// chunk of a page in c.pages, listed once, and none is a never-used chunk
// (of bump from bumpNext on, or of a page in fresh). It holds by
// construction, under mu:
//   - a chunk is listed only by pushFree, called by free for a chunk of a
//     page c has not detached (the page value, from the chunk's Ref, not
//     a page-table lookup: a page is detached under mu before the table
//     names its replacement, so a free delayed past a move sees it
//     detached), and by evacuate for chunks of a page it leaves in c;
//   - a page leaves c.pages only by detach, which in the same critical
//     section takes the page's chunks off the free list and marks it
//     detached (reset, after Close, forgets both);
//   - the page table changes the entry of a page of c only after detach
//     (replacePage), so lookup of a listed location always finds its page.
type class struct {
	s       *Store
	id      int // 1-based, as memcached's slab classes
	size    int // chunk size in bytes
	perPage int // chunks per page

	mu       sync.Mutex
	pages    []*page // in the order the class got them; chunk i of the class is pages[i/perPage] chunk i%perPage
	fresh    []*page // pages moved in from other classes whose chunks were never used, taken after bump
	freeHead uint32  // first free location, NotFound if none; chained through header.cas
	nfree    int     // length of the free list
	bump     *page   // newest page, whose chunks from bumpNext on were never used
	bumpNext int
	handPage int          // CLOCK hand: the next chunk the sweep inspects is
	handIdx  int          // chunk handIdx of pages[handPage]
	noMove   int64        // unix second before which moveWanted is not asked again (a "no" holds for a second)
	npages   atomic.Int32 // len(pages), for readers without mu

	items       atomic.Int64  // linked items
	itemBytes   atomic.Int64  // header, key and value bytes of linked items
	links       atomic.Uint64 // items ever linked
	evictions   atomic.Uint64 // unexpired items evicted by the sweep
	evictedUnf  atomic.Uint64 // ... of which never fetched
	evictedTime atomic.Int64  // seconds since the last access of the last item evicted
	reclaimed   atomic.Uint64 // expired items whose chunk the sweep reused
	expiredUnf  atomic.Uint64 // ... of which never fetched
	outOfMemory atomic.Uint64 // allocations that failed with ErrOutOfMemory
	age         atomic.Int64  // sampled age of the items next to be evicted (see sampleAge), as of ageAt
	ageAt       atomic.Int64  // unix second of age; 0 = never sampled
}

// newClass returns an empty class of the store s.
func newClass(s *Store, id, size, perPage int) *class {
	return &class{s: s, id: id, size: size, perPage: perPage, freeHead: NotFound}
}

// reset forgets the class's pages (after Close unmapped them). The caller
// holds mu.
func (c *class) reset() {
	c.pages, c.fresh, c.freeHead, c.nfree, c.bump, c.bumpNext, c.handPage, c.handIdx = nil, nil, NotFound, 0, nil, 0, 0, 0
	c.npages.Store(0)
}

// chunks returns the number of chunks in the class's pages. The caller
// holds mu.
func (c *class) chunks() int { return len(c.pages) * c.perPage }

// take returns a chunk for a new item without evicting: from the free
// list, else a never-used chunk (of the newest page, of a page moved in,
// or of a page mapped while the memory limit allows). It returns false,
// and no error, when none is left. The caller holds mu.
func (c *class) take() (*header, uint32, *page, bool, error) {
	if h, loc, p, ok := c.takeFree(); ok {
		return h, loc, p, true, nil
	}
	return c.takeNew()
}

// takeFree pops a chunk off the free list. The caller holds mu. It panics
// if the free-list invariant (see class) is broken: handing out a chunk of
// a page the class does not own would give two items one chunk.
func (c *class) takeFree() (*header, uint32, *page, bool) {
	if c.freeHead == NotFound {
		return nil, 0, nil, false
	}
	loc := c.freeHead
	p, idx, ok := c.s.lookup(loc)
	if !ok || p.c != c || p.detached {
		panic(fmt.Sprintf("itemstore: class %d: free location %#x is not a chunk of a page the class owns", c.id, loc))
	}
	h := p.chunk(idx)
	c.freeHead = uint32(h.cas)
	c.nfree--
	return h, loc, p, true
}

// pushFree puts a Free chunk of one of the class's pages (see the
// free-list invariant at class) on the free list. The caller holds mu.
func (c *class) pushFree(h *header, loc uint32) {
	h.cas = uint64(c.freeHead)
	c.freeHead = loc
	c.nfree++
}

// takeNew returns a never-used chunk: of the newest page, else of a page
// moved in, else of a page mapped if the memory limit allows. It returns
// false, and no error, when the limit is reached. The caller holds mu.
func (c *class) takeNew() (*header, uint32, *page, bool, error) {
	if c.bump == nil || c.bumpNext == c.perPage {
		switch {
		case len(c.fresh) > 0:
			c.bump, c.fresh = c.fresh[0], c.fresh[1:]
		default:
			p, err := c.s.newPage(c)
			if p == nil {
				return nil, 0, nil, false, err
			}
			c.pages = append(c.pages, p)
			c.npages.Add(1)
			c.bump = p
		}
		c.bumpNext = 0
	}
	idx := c.bumpNext
	c.bumpNext++
	return c.bump.chunk(idx), c.bump.loc(idx, c.s.chunkBits), c.bump, true, nil
}

// addPage gives the class a page of fresh (zeroed, never used) chunks,
// moved from another class. The caller holds mu.
func (c *class) addPage(p *page) {
	c.pages = append(c.pages, p)
	c.npages.Add(1)
	c.fresh = append(c.fresh, p)
}

// free returns the chunk h at loc of page p, Dead with no references or
// Writing and aborted, to the free list of p's class. Exactly one
// goroutine frees a chunk: the one whose transition left it unreferenced
// and not Linked. If the page left the class meanwhile (a move evacuated
// it while this free waited for the lock: evacuate leaves such a chunk to
// its pending free), the chunk is not listed and not written: its memory
// may already be retired. Cost: the class mutex.
func (c *class) free(p *page, h *header, loc uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.freeLocked(p, h, loc)
}

// freeLocked is free's work; the caller holds mu.
func (c *class) freeLocked(p *page, h *header, loc uint32) {
	if c.s.closed.Load() || p.detached {
		return
	}
	h.ctl.Store(ctlFor(ctlGen(h.ctl.Load()), stateFree, 0))
	c.pushFree(h, loc)
}
