package hashindex

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the transparent huge page size of x86-64 and arm64 Linux.
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the 2 MiB-aligned part of words with
// transparent huge pages (madvise MADV_HUGEPAGE), before it is first
// touched: a table searched at random then costs one TLB entry per 2 MiB,
// not per 4 KiB. Advice only: where the kernel refuses (THP disabled) the
// table works the same. Cost: one system call.
func adviseHuge(words []uint32) {
	if len(words)*4 < 2*hugePage {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*4)
	lo := int((hugePage - uintptr(unsafe.Pointer(&b[0]))%hugePage) % hugePage)
	hi := lo + (len(b)-lo)/hugePage*hugePage
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo:hi], unix.MADV_HUGEPAGE)
}
