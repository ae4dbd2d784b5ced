package server

import "sync/atomic"

// counters are the engine's command and event counters, memcached's names
// in the comments.
type counters struct {
	gets, getHits                 atomic.Uint64 // cmd_get, get_hits
	expired, flushed              atomic.Uint64 // get_expired, get_flushed (reads of either kind)
	sets                          atomic.Uint64 // cmd_set
	items                         atomic.Uint64 // total_items
	touches, touchHits            atomic.Uint64 // cmd_touch, touch_hits
	casHits, casMisses, casBadval atomic.Uint64 // cas_*
	deleteHits, deleteMisses      atomic.Uint64 // delete_*
	incrHits, incrMisses          atomic.Uint64 // incr_*
	decrHits, decrMisses          atomic.Uint64 // decr_*
	flushes                       atomic.Uint64 // cmd_flush
	evictions                     atomic.Uint64 // evictions
	indexDrops                    atomic.Uint64 // locations the index dropped (overwrite or displacement)
	selfDisplaced                 atomic.Uint64 // new items displaced out of the index at once
	staleReads                    atomic.Uint64 // reads located again because a write replaced their item
	optimisticRetries             atomic.Uint64 // write runs that searched again: an update of their stripe was applied meanwhile
	lockedSearches                atomic.Uint64 // searches made holding a key lock (after retries, or for a failed plain set)
	pendingFull                   atomic.Uint64 // writes that waited for room in the pending table
	updateErrors                  atomic.Uint64 // items unlinked because their index update failed
	updateInline                  atomic.Uint64 // update rounds applied by callers that found them overdue (overdue.go)
}
