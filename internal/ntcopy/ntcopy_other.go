//go:build !amd64

package ntcopy

import "unsafe"

// haveNT: no non-temporal copy here; Bytes uses the built-in copy.
const haveNT = false

// copyNT64 is never called where haveNT is false.
func copyNT64(dst, src unsafe.Pointer, n uintptr) {
	copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
}
