package server

import (
	"github.com/warpkv/warpkv/itemstore"
	"github.com/warpkv/warpkv/kv"
)

// The Engine's memcached administration (kv.Admin): slab page moves and
// automove, the memory limit, and cache dumps, carried out by the item
// store (see itemstore/move.go). Pages a move takes are emptied by the next
// write's allocation, whose index update deletes their items.

var _ kv.Admin = (*Engine)(nil)

// SlabClass returns the slab class of an item with the given key and value
// lengths, 0 if none holds it. Cost: a binary search of the class table.
func (e *Engine) SlabClass(keyLen, valueLen int) int {
	c, ok := e.store.ClassFor(keyLen, valueLen)
	if !ok {
		return 0
	}
	return c
}

// SlabsReassign queues the move of one page from class src (-1: the class
// with the most pages) to class dst (0: back to the memory pool). Cost:
// O(1).
func (e *Engine) SlabsReassign(src, dst int) kv.ReassignResult { return e.store.Reassign(src, dst) }

// SlabsAutomove sets the automove level (0 off, 1, 2; -1 keeps it) and,
// when ratio is not 0, the age ratio. Cost: O(1).
func (e *Engine) SlabsAutomove(level int, ratio float64) error {
	switch level {
	case -1:
		level = itemstore.AutomoveDefault // unchanged
	case 0:
		level = itemstore.AutomoveOff
	}
	return e.store.SetAutomove(level, ratio)
}

// SetMemoryLimit changes the item memory limit in bytes (cache_memlimit).
// The hash index keeps its size. Cost: O(1).
func (e *Engine) SetMemoryLimit(bytes int64) error { return e.store.SetMemoryLimit(bytes) }

// Dump calls fn for the live (unexpired, unflushed) items of slab class
// until fn returns false. Cost: a pass over the class's chunks, its lock
// held one page at a time.
func (e *Engine) Dump(class int, fn func(it kv.DumpedItem) bool) {
	now := e.clock()
	fs := e.flushState()
	e.store.Dump(class, func(it itemstore.DumpItem) bool {
		if !kv.Alive(it.Exptime, now) || !fs.Valid(it.CAS, it.LastAccess, now) {
			return true
		}
		return fn(kv.DumpedItem{Key: it.Key, ValueLen: it.ValueLen, Flags: it.Flags, Exptime: it.Exptime,
			LastAccess: it.LastAccess, CAS: it.CAS, Fetched: it.Fetched, Class: class, Meta: it.Meta})
	})
}

// hitMeta completes a Get hit on the held item r: the item's marks before
// the op and, when kv.Apply let the op try for the win token, whether it
// took it (exactly one concurrent reader does). Cost: an atomic load, and
// an atomic or for a token.
func hitMeta(r itemstore.Ref, eff kv.Effect, res *kv.Result) {
	res.Meta = r.Meta()
	if eff.Win {
		res.Won = r.TakeWin()
	}
}
