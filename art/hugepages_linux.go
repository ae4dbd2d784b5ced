//go:build linux

package art

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks the kernel to back the whole 2 MiB pages within s with
// transparent huge pages when they are first touched (madvise
// MADV_HUGEPAGE; honoured when the host's THP mode is "madvise" or
// "always"): one page fault per 2 MiB instead of 512. The advice splits
// the heap's mapping at the range's ends. Errors are ignored: the advice
// changes no contents. Cost: one system call.
func adviseHuge[T any](s []T) {
	const huge = 2 << 20
	if len(s) == 0 {
		return
	}
	var z T
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(z))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo, hi := (p+huge-1)&^(huge-1), (p+uintptr(len(b)))&^(huge-1)
	if hi <= lo {
		return // no whole huge page within s
	}
	_ = syscall.Madvise(b[lo-p:hi-p], syscall.MADV_HUGEPAGE)
}
