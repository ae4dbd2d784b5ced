package ntcopy

import "unsafe"

// haveNT: SSE2's MOVNTDQ is part of every amd64 processor.
const haveNT = true

// copyNT64 copies n bytes (a multiple of 64) from src to dst (16-byte
// aligned) with unaligned loads and non-temporal stores, then fences the
// stores (SFENCE). Implemented in ntcopy_amd64.s.
//
//go:noescape
func copyNT64(dst, src unsafe.Pointer, n uintptr)
