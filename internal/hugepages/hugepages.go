// Package hugepages asks the operating system to back large host arrays
// with transparent huge pages before they are first touched.
package hugepages

import "unsafe"

// Size is the transparent huge page size of x86-64 and arm64 Linux.
const Size = 2 << 20

// Advise asks the kernel to back the Size-aligned part of s with
// transparent huge pages (Linux: madvise MADV_HUGEPAGE), before s is
// first touched. An array searched at random then costs one TLB entry
// per 2 MiB, not per 4 KiB, and an array filled once takes one page
// fault per 2 MiB: on the H200 host a 7 GB decoded history took most of
// its time in faults of 4 KiB pages. Advice only: where the kernel
// refuses (THP disabled, another system) s works the same. Arrays under
// two huge pages are left alone. Cost: one system call.
func Advise[T any](s []T) {
	n := len(s) * int(unsafe.Sizeof(*new(T)))
	if n < 2*Size {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
	lo := int((Size - uintptr(unsafe.Pointer(&b[0]))%Size) % Size)
	hi := lo + (len(b)-lo)/Size*Size
	if hi <= lo {
		return
	}
	advise(b[lo:hi])
}
