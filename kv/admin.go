package kv

// Admin is implemented by caches that support memcached's slab and memory
// administration (slabs reassign, slabs automove, cache_memlimit, stats
// cachedump, lru_crawler metadump) and per-class statistics. The protocol layer answers those
// commands with ERROR for a cache without it.
type Admin interface {
	// SlabClass returns the slab class an item with a keyLen-byte key and
	// a valueLen-byte value goes to, 0 if none holds it.
	SlabClass(keyLen, valueLen int) int
	// SlabsReassign queues the move of one page from class src (-1: any)
	// to class dst (0: the free memory pool).
	SlabsReassign(src, dst int) ReassignResult
	// SlabsAutomove sets the automove level (0 off, 1, 2; -1 keeps it)
	// and, when ratio is not 0, the age ratio of level 1.
	SlabsAutomove(level int, ratio float64) error
	// SetMemoryLimit changes the item memory limit in bytes.
	SetMemoryLimit(bytes int64) error
	// Dump calls fn for the live items of slab class, in slab order,
	// until fn returns false (memcached's "stats cachedump" and
	// "lru_crawler metadump").
	Dump(class int, fn func(it DumpedItem) bool)
}

// DumpedItem describes a live item to Admin.Dump's callback.
type DumpedItem struct {
	Key        []byte // valid only during the call
	ValueLen   int
	Flags      uint32
	Exptime    int64 // absolute unix seconds, 0: never
	LastAccess int64 // unix seconds of the last read, or of the store
	CAS        uint64
	Fetched    bool // read since it was stored
	Class      int  // slab class
	Meta       ItemMeta
}

// ReassignResult is the outcome of Admin.SlabsReassign, one per reply of
// memcached's "slabs reassign".
type ReassignResult int

// Reassign results.
const (
	ReassignOK       ReassignResult = iota // the move is queued: "OK"
	ReassignRunning                        // a move is already queued: "BUSY ..."
	ReassignBadClass                       // src or dst is not a class: "BADCLASS ..."
	ReassignNoSpare                        // src has fewer than two pages: "NOSPARE ..."
	ReassignSame                           // src equals dst: "SAME ..."
	ReassignDisabled                       // slab reassignment is off: "CLIENT_ERROR slab reassignment disabled"
)
