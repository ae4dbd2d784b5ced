// Package reuse reuses scratch slices from batch to batch: the index
// jobs, hashes and grouping arrays of the server and the hash index.
package reuse

// Resize sets *s to n elements and returns it: *s's own array when its
// capacity allows, else a new one of max(n, 2*cap(*s)) elements, so that
// a slice reused by batches of growing sizes reallocates O(log n) times.
// The contents are unspecified (a reused array keeps what it held, a new
// one is zeroed): callers write every element they read. Cost: O(1), or
// the allocation.
func Resize[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n, max(n, 2*cap(*s)))
	}
	*s = (*s)[:n]
	return *s
}
