package itemstore

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// NotFound is the location no item ever has (hashindex.NotFound).
const NotFound uint32 = 0xFFFFFFFF

// Store is a slab item store. All its methods are safe for concurrent use,
// except Close, which must not run concurrently with any other call and
// must follow the release of every reference.
type Store struct {
	cfg       config
	chunkBits uint   // low location bits: the chunk index in its page
	chunkMask uint32 // 1<<chunkBits - 1
	classes   []*class

	// pages is the page table, indexed by page number (the high bits of a
	// location), MemoryLimit/pageSize entries. Entries go from nil to a
	// page once and back to nil at Close, so readers look pages up
	// without a lock.
	pages []atomic.Pointer[page]

	pageMu sync.Mutex // serializes page creation and unmapping
	npages int        // pages mapped; guarded by pageMu
	mapped atomic.Int64
	closed atomic.Bool
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
	addressable := int64(1) << (32 - s.chunkBits)
	if perPage == 1<<s.chunkBits {
		addressable-- // the last chunk of the last page would be NotFound
	}
	maxPages := cfg.limit / int64(cfg.pageSize)
	if maxPages > addressable {
		return nil, fmt.Errorf("itemstore: memory limit %d: %d pages of %d bytes, but %d-bit chunk indices leave room to address %d",
			cfg.limit, maxPages, cfg.pageSize, s.chunkBits, addressable)
	}
	s.pages = make([]atomic.Pointer[page], maxPages)
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
	for i := range s.npages {
		p := s.pages[i].Swap(nil)
		if err := syscall.Munmap(p.mem); err != nil {
			errs = append(errs, fmt.Errorf("itemstore: close: munmap of page %d: %w", i, err))
		}
	}
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
func (s *Store) MemoryLimit() int64 { return s.cfg.limit }

// lookup returns the page holding loc and the chunk's index in it, or false
// if loc addresses no chunk of a mapped page. Cost: one atomic load.
func (s *Store) lookup(loc uint32) (*page, int, bool) {
	pn := loc >> s.chunkBits
	if uint64(pn) >= uint64(len(s.pages)) {
		return nil, 0, false
	}
	p := s.pages[pn].Load()
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
	if s.npages == len(s.pages) {
		return nil, nil
	}
	mem, err := mapPage(s.cfg.pageSize)
	if err != nil {
		return nil, err
	}
	p := &page{mem: mem, base: unsafe.Pointer(unsafe.SliceData(mem)), num: uint32(s.npages), c: c}
	s.pages[s.npages].Store(p)
	s.npages++
	s.mapped.Add(1)
	return p, nil
}
