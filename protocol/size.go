package protocol

import "github.com/warpkv/warpkv/kv"

// memcached's item layout on a 64-bit host, used for the slab class
// reported by the meta debug command (me); the item's total size is
// kv.ItemTotal.
const (
	itemHeaderSize = 48 // sizeof(item)
	slabChunkMin   = 48 // -n: minimum space for key, value and flags
	slabFactor     = 1.25
)

// itemTotal is kv.ItemTotal: memcached's total size of an item.
func itemTotal(nkey int, flags uint32, vlen int64) int64 { return kv.ItemTotal(nkey, flags, vlen) }

// tooLarge reports whether memcached refuses an item as "object too large
// for cache": its total size is over itemSizeMax (-I), or its length is
// negative.
func tooLarge(nkey int, flags uint32, vlen int64, itemSizeMax int) bool {
	return vlen < 0 || itemTotal(nkey, flags, vlen) > int64(itemSizeMax)
}

// slabClasses returns the chunk sizes of memcached's default slab classes
// for an item size limit (-n 48, -f 1.25, slab_chunk_max = limit/2); index 0
// is unused, the last class holds chunks of the largest size.
func slabClasses(itemSizeMax int) []int {
	chunkMax := itemSizeMax / 2
	sizes := []int{0}
	size := itemHeaderSize + slabChunkMin
	for len(sizes) < 63 && float64(size) < float64(chunkMax)/slabFactor {
		if size%8 != 0 {
			size += 8 - size%8
		}
		sizes = append(sizes, size)
		size = int(float64(size) * slabFactor)
	}
	return append(sizes, chunkMax)
}

// slabClass returns the slab class memcached with default settings reports
// for an item of total size ntotal: the smallest class that holds it, the
// largest for a chunked item. The meta debug command shows it when the
// cache gives none. Cost: a scan of at most 63 classes.
func slabClass(classes []int, ntotal int64) int {
	largest := len(classes) - 1
	for c := 1; c < largest; c++ {
		if ntotal <= int64(classes[c]) {
			return c
		}
	}
	return largest
}
