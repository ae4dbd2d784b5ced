package itemstore

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// NotFound is the location no item ever has (hashindex.NotFound).
const NotFound uint32 = 0xFFFFFFFF

// Store is a slab item store. All its methods are safe for concurrent use,
// except Close, which must not run concurrently with any other call and
// must follow the release of every reference.
type Store struct {
	cfg         config
	chunkBits   uint   // low location bits: the chunk index in its page
	chunkMask   uint32 // 1<<chunkBits - 1
	addressable int64  // page numbers 32-bit locations can address
	classes     []*class

	// table is the page table, indexed by page number (the high bits of a
	// location); it is replaced by a longer copy when the memory limit
	// grows past it.
	table atomic.Pointer[pageTable]

	pageMu    sync.Mutex // serializes page mapping, replacement and unmapping
	npages    int        // pages mapped and owned by classes; guarded by pageMu
	nextNum   uint32     // the next never-used page number; guarded by pageMu
	freeNums  []uint32   // page numbers given back; guarded by pageMu
	retired   []retired  // replaced pages' memory, unmapped after retireGrace; guarded by pageMu
	held      int64      // bytes taken by Hold; guarded by pageMu
	heldPages int64      // the pages they fill, taken from the limit (hold.go); guarded by pageMu

	mapped   atomic.Int64 // = npages, for lock-free readers
	maxPages atomic.Int64 // the memory limit in pages
	closed   atomic.Bool
	warmOnes atomic.Int64 // Warm's sink: keeps its loads (almost never counts)

	slabs slabState // rebalancing: policy, requests, counters (move.go)
}

// New returns an empty store configured by o. It maps no memory: pages are
// mapped as size classes need them. It fails when o is out of bounds or
// when MemoryLimit/pageSize pages cannot all be addressed by 32-bit
// locations. Cost: the class table and a page table of 8 bytes a page.
func New(o Options) (*Store, error) {
	cfg, err := o.resolve()
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg}
	sizes := classSizes(cfg.pageSize, cfg.chunkMin, cfg.factor)
	for i, size := range sizes {
		s.classes = append(s.classes, newClass(s, i+1, size, cfg.pageSize/size))
	}
	perPage := s.classes[0].perPage // the most chunks a page holds
	s.chunkBits = uint(bits.Len(uint(perPage - 1)))
	s.chunkMask = uint32(1)<<s.chunkBits - 1
	s.addressable = int64(1) << (32 - s.chunkBits)
	if perPage == 1<<s.chunkBits {
		s.addressable-- // the last chunk of the last page would be NotFound
	}
	maxPages := cfg.limit / int64(cfg.pageSize)
	if maxPages > s.addressable {
		return nil, fmt.Errorf("itemstore: memory limit %d: %d pages of %d bytes, but %d-bit chunk indices leave room to address %d",
			cfg.limit, maxPages, cfg.pageSize, s.chunkBits, s.addressable)
	}
	s.maxPages.Store(maxPages)
	s.table.Store(&pageTable{pages: make([]atomic.Pointer[page], maxPages)})
	s.slabs.init(cfg.slabs)
	return s, nil
}

// Close unmaps every page. Calls after Close fail (Alloc with ErrClosed,
// Acquire and Unlink report false); key and value slices and references
// taken before it must not be used. A second Close returns an error
// wrapping ErrClosed. Cost: one munmap a page.
func (s *Store) Close() error {
	for _, c := range s.classes {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	if s.closed.Swap(true) {
		return fmt.Errorf("itemstore: close: %w", ErrClosed)
	}
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	var errs []error
	t := s.table.Load()
	for i := range t.pages {
		if p := t.pages[i].Swap(nil); p != nil {
			if err := syscall.Munmap(p.mem); err != nil {
				errs = append(errs, fmt.Errorf("itemstore: close: munmap of page %d: %w", i, err))
			}
		}
	}
	for _, r := range s.retired {
		if err := syscall.Munmap(r.mem); err != nil {
			errs = append(errs, fmt.Errorf("itemstore: close: munmap of a retired page: %w", err))
		}
	}
	s.retired = nil
	s.npages = 0
	s.mapped.Store(0)
	for _, c := range s.classes {
		c.reset()
	}
	return errors.Join(errs...)
}

// PageSize returns the size in bytes of every slab page: 1 MiB, or
// ItemSizeMax if that is larger.
func (s *Store) PageSize() int { return s.cfg.pageSize }

// ItemSizeMax returns the longest value Alloc accepts, in bytes.
func (s *Store) ItemSizeMax() int { return s.cfg.itemSizeMax }

// MemoryLimit returns the cap on mapped page bytes.
func (s *Store) MemoryLimit() int64 { return s.maxPages.Load() * int64(s.cfg.pageSize) }

// lookup returns the page holding loc and the chunk's index in it, or false
// if loc addresses no chunk of a mapped page. Cost: two atomic loads.
func (s *Store) lookup(loc uint32) (*page, int, bool) {
	pn := loc >> s.chunkBits
	t := s.table.Load()
	if uint64(pn) >= uint64(len(t.pages)) {
		return nil, 0, false
	}
	p := t.pages[pn].Load()
	if p == nil {
		return nil, 0, false
	}
	idx := int(loc & s.chunkMask)
	if idx >= p.c.perPage {
		return nil, 0, false
	}
	return p, idx, true
}

// newPage maps a page for class c, or returns nil (and no error) when the
// memory limit leaves no room for one. Cost: one mmap.
func (s *Store) newPage(c *class) (*page, error) {
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	if int64(s.npages) >= s.pageCap() {
		return nil, nil
	}
	num, ok := s.takeNum()
	if !ok {
		return nil, nil
	}
	mem, err := mapPage(s.cfg.pageSize)
	if err != nil {
		s.freeNums = append(s.freeNums, num)
		return nil, err
	}
	p := newPageOn(mem, num, c)
	s.table.Load().pages[num].Store(p)
	s.npages++
	s.mapped.Add(1)
	return p, nil
}

// takeNum returns an unused page number, growing the page table if
// needed. The caller holds pageMu.
func (s *Store) takeNum() (uint32, bool) {
	if n := len(s.freeNums); n > 0 {
		num := s.freeNums[n-1]
		s.freeNums = s.freeNums[:n-1]
		return num, true
	}
	if int64(s.nextNum) >= s.addressable {
		return 0, false
	}
	num := s.nextNum
	s.nextNum++
	t := s.table.Load()
	if int(num) >= len(t.pages) {
		// A raised memory limit: a longer table, the old entries copied.
		// Readers still on the old table see nil for the new numbers,
		// which no location can name before the page is published here.
		nt := &pageTable{pages: make([]atomic.Pointer[page], min(max(2*len(t.pages), int(num)+1), int(s.addressable)))}
		for i := range t.pages {
			nt.pages[i].Store(t.pages[i].Load())
		}
		s.table.Store(nt)
	}
	return num, true
}

// retireGrace is how long the memory of a replaced or given-back page stays
// mapped (and zeroed) after the page table stops naming it: a reader that
// loaded the page just before reads zeros (no linked item) instead of
// faulting. Readers hold a page only between two loads, for nanoseconds.
const retireGrace = 10 * time.Second

// retired is the memory of a page that left the page table.
type retired struct {
	mem []byte
	at  time.Time
}

// retire drops the contents of mem (its physical memory goes back to the
// system; reads see zeros: dropPage) and unmaps it after retireGrace, along
// with earlier retired pages whose grace is over. The caller holds pageMu.
// Cost: dropPage (one madvise on Linux), and one munmap per page whose
// grace is over.
func (s *Store) retire(mem []byte, now time.Time) {
	dropPage(mem)
	s.retired = append(s.retired, retired{mem: mem, at: now})
	// Retired in time order (but for concurrent moves' clock reads a
	// moment apart): the expired ones are a prefix, and one out of order
	// waits for the next call.
	n := 0
	for n < len(s.retired) && now.Sub(s.retired[n].at) >= retireGrace {
		syscall.Munmap(s.retired[n].mem)
		n++
	}
	if n > 0 {
		rest := copy(s.retired, s.retired[n:])
		clear(s.retired[rest:])
		s.retired = s.retired[:rest]
	}
}
