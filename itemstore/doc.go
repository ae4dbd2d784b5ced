// Package itemstore is the item memory of warpkv's Mega-KV server: items
// (key, value, flags, expiry time, CAS unique) in slab pages outside the Go
// heap, each addressed by the 32-bit location the GPU hash index stores,
// with per-class CLOCK eviction. It is safe for concurrent use; reads take
// no lock.
//
// # Layout
//
// Memory is pages of PageSize bytes (1 MiB, or ItemSizeMax if larger),
// each an anonymous private mmap, so the garbage collector never scans
// them. Pages are mapped when a size class needs one, and never more than
// MemoryLimit/PageSize of them; a page that moves to another class gets
// fresh memory under its page number (move.go). Each page is carved into equal chunks of
// one size class. The classes are memcached 1.6's: the smallest chunk is
// the 48-byte item header plus ChunkMin (48) bytes, each next one
// GrowthFactor (1.25) times larger, rounded up to 8 bytes, up to half a
// page, then one class of a whole page. An item goes to the smallest class
// whose chunk holds its header, key and value.
//
// A location is page<<chunkBits | chunk, where chunkBits is just enough for
// the chunks of the smallest class in a page (14 bits by default, so up to
// 2^18 pages, 256 GiB). New refuses a MemoryLimit with more pages than
// locations can address; no valid location is 0xFFFFFFFF (NotFound).
//
// A chunk starts with the item header: a control word (state, reference
// count, CLOCK bit, fetched bit, reuse generation), key hash, CAS unique,
// expiry time, last access time, flags, value and key lengths; then the
// key, then the value.
//
// # Life cycle
//
// An item's state tag says who may see it (the Mega-KV paper's status
// tag):
//
//	Free --Alloc--> Writing --Link--> Linked --Unlink or eviction--> Dead --last Release--> Free
//	                Writing --Abort (or Release)--> Free
//
// Alloc returns a Writing item, visible to nobody else, with the caller
// holding one reference; the caller fills the value, then Links it. Acquire
// takes a reference only to a Linked item (a compare-and-swap on the
// control word), so a reader never sees an item being written or a chunk
// being reused: a chunk returns to its class's free list only when it is
// Dead and its last reference is released, and exactly one goroutine makes
// that transition. Unlink takes the location and the key hash and does
// nothing when they do not match a Linked item, because the hash index
// reports stale locations; the generation in the control word makes a
// stale compare-and-swap fail on a reused chunk. Readers still compare
// keys: a location may hold another key after reuse.
//
// # Eviction
//
// Alloc takes a chunk from the class's free list, else a never-used chunk
// of its newest page, else maps a page if the memory limit allows, else
// runs the class's CLOCK sweep: the hand skips chunks that are not Linked
// or are referenced, takes an expired item at once, clears a set CLOCK bit
// (Acquire sets it: a second chance), and evicts the first item whose bit
// is clear, unless an expired item lies just ahead of it, which it takes
// instead. A sweep gives up after two turns with ErrOutOfMemory. Each
// evicted or reclaimed item is returned to the caller as a Victim, to be
// deleted from the hash index; its chunk is reused at once for the new
// item.
//
// # Differences from memcached
//
//   - MemoryLimit is a hard cap: memcached lets every class take its first
//     page past the limit, this store does not; a class that has no page
//     (or whose every chunk is being written or read) takes one from
//     another class instead, a class's only page if no class has two (see
//     move.go), and fails with ErrOutOfMemory only when every page it
//     tries is busy or slab rebalancing is off (NoReassign). With more
//     classes in use than pages, classes take pages from each other in
//     turn, evicting a page of items each time.
//   - Pages move between classes as with memcached's slab_reassign and
//     slab_automove, but inside Alloc (the caller deletes the moved page's
//     items from the index with its own update) and driven by the ages at
//     the CLOCK hands rather than by a background thread's window of
//     evictions; the items of a moved page are evicted, never copied to
//     free chunks of their class.
//   - Eviction is CLOCK per class, not segmented LRU; there is no LRU
//     crawler, so expired items are reclaimed only by the sweep (or when
//     the server unlinks them on access).
//   - Items are never chunked: an item must fit in one page, so the
//     largest value is a little under the page size even when ItemSizeMax
//     equals it.
//   - Values are stored without memcached's trailing "\r\n"; the header is
//     always 48 bytes (CAS included).
//   - No preallocation (-L) and no large pages.
package itemstore
