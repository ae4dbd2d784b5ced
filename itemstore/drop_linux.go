package itemstore

import "syscall"

// dropPage drops the contents of a retired page's memory: MADV_DONTNEED
// gives its physical memory back to the system at once, and later reads of
// the private anonymous mapping see zeros. Cost: one madvise.
func dropPage(mem []byte) {
	syscall.Madvise(mem, syscall.MADV_DONTNEED)
}
