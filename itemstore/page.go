package itemstore

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// page is one mapped slab page, carved into equal chunks of one class. Its
// layout fields (mem, base, num, c) never change after it is published in
// the store's page table: a page moved to another class (see move.go) is
// replaced by a new page value with fresh memory under the same page
// number, and the old memory is retired, so a reader that loaded the old
// value only ever sees the old layout. A page value therefore belongs to
// one class for its whole life, and detached says whether that class
// still owns it.
type page struct {
	mem  []byte         // the anonymous private mapping, pageSize bytes
	base unsafe.Pointer // &mem[0]
	num  uint32         // page number: the high bits of its locations
	c    *class         // the class whose chunks it holds
	live atomic.Int32   // linked items in the page

	// detached is set, once, when the page leaves c (class.detach, by a
	// move); guarded by c.mu. From then on none of its chunks is put on
	// a free list (see class.free), whatever the page table says.
	detached bool
}

// mapPage maps a zeroed page of size bytes outside the Go heap, so the
// garbage collector never scans it. Cost: one mmap system call; the kernel
// backs the page lazily as chunks are first written.
func mapPage(size int) ([]byte, error) {
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap of %d bytes: %w", size, err)
	}
	return mem, nil
}

// newPageOn returns a page of class c over mem with page number num.
func newPageOn(mem []byte, num uint32, c *class) *page {
	return &page{mem: mem, base: unsafe.Pointer(unsafe.SliceData(mem)), num: num, c: c}
}

// chunk returns the header of chunk idx of the page.
func (p *page) chunk(idx int) *header {
	return (*header)(unsafe.Add(p.base, idx*p.c.size))
}

// loc returns the location of chunk idx of the page.
func (p *page) loc(idx int, chunkBits uint) uint32 {
	return p.num<<chunkBits | uint32(idx)
}

// pageTable maps page numbers to pages. Entries go from nil to a page, from
// a page to its replacement (a move) or back to nil (a page given back);
// readers load them without a lock.
type pageTable struct {
	pages []atomic.Pointer[page]
}
