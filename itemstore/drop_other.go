//go:build unix && !linux

package itemstore

import "golang.org/x/sys/unix"

// dropPage drops the contents of a retired page's memory where
// MADV_DONTNEED does not promise zeros to later reads (macOS, the BSDs):
// it zeroes the memory, then tells the system with MADV_FREE that the
// pages may be reclaimed (a reclaimed page reads as zeros too). Cost: a
// write of the whole page and one madvise.
func dropPage(mem []byte) {
	clear(mem)
	unix.Madvise(mem, unix.MADV_FREE)
}
