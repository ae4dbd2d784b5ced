package hugepages

import "golang.org/x/sys/unix"

// advise is madvise MADV_HUGEPAGE; its error (THP off) is of no use.
func advise(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
