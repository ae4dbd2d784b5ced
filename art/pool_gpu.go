package art

import "github.com/warpkv/warpkv/gpu"

// The GPU engine's scratch memory is one gpu.Pool of named buffers, reused
// across batches and grown with headroom. A phase reserves the buffers it
// will take (sized by the counts it has read back so far) before it
// queues its kernels, and takes them without allocating; a batch's
// allocations all come before its first write to records that the tree
// already links (see engine_gpu.go), so running out of memory leaves the tree as
// it was. Names are prefixed by phase: batch., get., upd., q. (uploads and
// queries), sort., b. (build rounds), i. (insert), n. (node rounds), d.
// (delete), ac. (arena compaction).

// needsOf returns the needs of the buffers names, n elements of T each.
func needsOf[T any](n int, names ...string) []gpu.Need {
	ns := make([]gpu.Need, len(names))
	for i, name := range names {
		ns[i] = gpu.NeedOf[T](name, n)
	}
	return ns
}

// takeAll takes the buffers names, n elements of T each (reserved
// before).
func takeAll[T any](p *gpu.Pool, n int, names ...string) []*gpu.Buffer[T] {
	bs := make([]*gpu.Buffer[T], len(names))
	for i, name := range names {
		bs[i] = gpu.Take[T](p, name, n)
	}
	return bs
}
