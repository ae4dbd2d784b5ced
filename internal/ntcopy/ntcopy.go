// Package ntcopy copies large pointer-free arrays with non-temporal
// stores: the destination's cache lines are written straight to memory
// instead of being read in first (a read for ownership) and evicted
// later. A copy of n bytes with ordinary stores moves 3n bytes through
// the memory controllers, with non-temporal stores 2n; where the copy is
// bound by host memory, as the staging copies of a whole GPU call are on
// all cores, that is up to a third less traffic.
//
// On the H200 machines' host (16 cores of an Intel Xeon), 16 goroutines
// copying 256 MiB in 128 KiB pieces with Bytes copied 70-75 GB/s, against
// 42-43 GB/s with the built-in copy in 16 MiB pieces (warpkv bench limits
// --device cpu); copying 80 MB, partly in the cache, 107-130 GB/s against
// 74-96 GB/s in pieces of 64 KiB to 1 MiB (BenchmarkParallelCopy).
//
// Go's own copy switches to non-temporal stores only for single copies of
// 1 MiB or more, and then prefetches its source non-temporally too; the
// pinned pipeline's copies are cut into smaller pieces so that a chunk's
// last piece ends with the others. Bytes stores non-temporally at any
// size from minBytes up, with ordinary loads.
//
// The destination is not left in the cache: use it for data that the
// caller does not read right away (staging for a DMA, answers larger than
// the cache). The source and destination must not overlap and must hold
// no Go pointers (the stores bypass the garbage collector's write
// barrier).
package ntcopy

import "unsafe"

// minBytes is the shortest copy that takes non-temporal stores; shorter
// copies (and every copy where no assembly exists) use the built-in copy.
const minBytes = 4 << 10

// step is the most bytes one call into the assembly loop copies, so that
// a goroutine does not run long without a preemption point.
const step = 256 << 10

// Bytes copies min(len(dst), len(src)) bytes from src to dst and returns
// that count, with non-temporal stores from minBytes up where the
// platform has them (amd64). dst and src must not overlap. Cost: one
// pass over both; the stores are fenced before it returns, so another
// goroutine or a DMA that it then signals sees every byte.
func Bytes(dst, src []byte) int {
	n := min(len(dst), len(src))
	if !haveNT || n < minBytes {
		return copy(dst, src)
	}
	// Ordinary stores up to dst's first 16-byte boundary and after its
	// last whole 64-byte block; non-temporal stores in between.
	head := int(-uintptr(unsafe.Pointer(unsafe.SliceData(dst))) & 15)
	copy(dst[:head], src[:head])
	end := head + (n-head)&^63
	for lo := head; lo < end; lo += step {
		hi := min(lo+step, end)
		copyNT64(unsafe.Pointer(&dst[lo]), unsafe.Pointer(&src[lo]), uintptr(hi-lo))
	}
	copy(dst[end:n], src[end:n])
	return n
}

// Slice is Bytes for arrays of a pointer-free element type T (integers,
// floats, bools, and arrays or structs of them): it copies
// min(len(dst), len(src)) elements and returns that count. T must hold
// no pointers. Cost: Bytes'.
func Slice[T any](dst, src []T) int {
	n := min(len(dst), len(src))
	if n == 0 {
		return 0
	}
	size := int(unsafe.Sizeof(dst[0]))
	Bytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), n*size),
		unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(src))), n*size))
	return n
}
