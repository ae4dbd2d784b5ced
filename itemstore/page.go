package itemstore

import (
	"fmt"
	"syscall"
	"unsafe"
)

// page is one mapped slab page, carved into equal chunks of one class. A
// page belongs to its class until Close (there is no rebalancing), so its
// fields never change after it is published in the store's page table.
type page struct {
	mem  []byte         // the anonymous private mapping, pageSize bytes
	base unsafe.Pointer // &mem[0]
	num  uint32         // page number: the high bits of its locations
	c    *class         // the class whose chunks it holds
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

// chunk returns the header of chunk idx of the page.
func (p *page) chunk(idx int) *header {
	return (*header)(unsafe.Add(p.base, idx*p.c.size))
}

// loc returns the location of chunk idx of the page.
func (p *page) loc(idx int, chunkBits uint) uint32 {
	return p.num<<chunkBits | uint32(idx)
}
