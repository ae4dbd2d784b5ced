package itemstore

import "github.com/warpkv/warpkv/kv"

// Ref is a counted reference to an item, from Alloc or Acquire. While it
// is held the item's chunk is not reused, so its key and value stay
// intact. The slices from Key and Value point into the store's pages and
// must not be used after Release (or after Close): doing so is the
// caller's bug and may read another item's bytes, or fault. A Ref is a
// small value; copies are the same reference, released once.
type Ref struct {
	p   *page // the page holding the item; not moved while a reference is held
	h   *header
	loc uint32
	gen uint32 // the chunk's generation when the reference was taken
}

// Valid reports whether r is a reference (not the zero Ref).
func (r Ref) Valid() bool { return r.h != nil }

// Release drops the reference. Releasing the last reference to an
// unlinked (Dead) item frees its chunk; releasing a Writing item from
// Alloc that was never linked aborts it. Release panics when the reference
// is not held (released twice, or its chunk already reused). Cost: a
// compare-and-swap; the class mutex if the chunk is freed.
func (r Ref) Release() {
	h := r.h
	for {
		ct := h.ctl.Load()
		st := ctlState(ct)
		if ctlGen(ct) != r.gen || ctlRefs(ct) == 0 || st == stateFree {
			panic("itemstore: release of a reference that is not held")
		}
		if st == stateWriting {
			r.p.c.s.Abort(r)
			return
		}
		if h.ctl.CompareAndSwap(ct, ct-1) {
			if ct&ctlRefMask == 1 && st == stateDead {
				r.p.c.free(r.p, h, r.loc)
			}
			return
		}
	}
}

// releaseKept drops a reference to a Dead item, as Release does, but
// instead of freeing the chunk when the reference was the last it reports
// true: the caller then owes the chunk its free (Unlinks.Flush).
func (r Ref) releaseKept() bool {
	h := r.h
	for {
		ct := h.ctl.Load()
		if ctlGen(ct) != r.gen || ctlRefs(ct) == 0 || ctlState(ct) != stateDead {
			panic("itemstore: kept release of a reference that is not held to a Dead item")
		}
		if h.ctl.CompareAndSwap(ct, ct-1) {
			return ct&ctlRefMask == 1
		}
	}
}

// Loc returns the item's location, the value the hash index stores.
func (r Ref) Loc() uint32 { return r.loc }

// Hash returns the key hash given to Alloc.
func (r Ref) Hash() uint64 { return r.h.hash.Load() }

// Key returns the item's key, in the store's memory: valid until Release.
func (r Ref) Key() []byte { return r.h.key() }

// Value returns the item's value, in the store's memory: valid until
// Release, and writable (only) while the item is Writing. A new item's
// value holds whatever the chunk held before.
func (r Ref) Value() []byte { return r.h.value() }

// Size returns the chunk bytes the item uses: header, key and value.
func (r Ref) Size() int { return int(r.h.size()) }

// Class returns the item's size class, numbered from 1.
func (r Ref) Class() int { return r.p.c.id }

// Flags returns the client flags given to Alloc.
func (r Ref) Flags() uint32 { return r.h.flags }

// Exptime returns the expiry time in unix seconds, 0 for never.
func (r Ref) Exptime() int64 { return r.h.exptime.Load() }

// SetExptime changes the expiry time (memcached touch); atomic.
func (r Ref) SetExptime(t int64) { r.h.exptime.Store(t) }

// CAS returns the CAS unique given to Alloc.
func (r Ref) CAS() uint64 { return r.h.cas }

// LastAccess returns the time of the last Touch, or of Alloc, in unix
// seconds.
func (r Ref) LastAccess() int64 { return int64(r.h.atime.Load()) }

// Touch records an access at now (unix seconds) and sets the fetched bit.
// Cost: two atomic operations.
func (r Ref) Touch(now int64) {
	r.h.atime.Store(clampTime(now))
	r.h.ctl.Or(ctlFetched)
}

// Fetched reports whether Touch was called since the item was allocated.
func (r Ref) Fetched() bool { return r.h.ctl.Load()&ctlFetched != 0 }

// Meta returns the item's meta protocol marks. Cost: one atomic load.
func (r Ref) Meta() kv.ItemMeta { return ctlMeta(r.h.ctl.Load()) }

// SetMeta gives an item the caller is writing (from Alloc, not yet
// linked) its meta protocol marks. Cost: one atomic operation.
func (r Ref) SetMeta(m kv.ItemMeta) {
	r.h.ctl.And(^uint64(ctlMetaMask))
	r.h.ctl.Or(uint64(m) << ctlMetaShift & ctlMetaMask)
}

// TakeWin sets the item's kv.MetaWon mark and reports whether this call
// set it: of any number of concurrent callers exactly one wins the item's
// token (memcached's mg W). Cost: one atomic operation.
func (r Ref) TakeWin() bool {
	const won = uint64(kv.MetaWon) << ctlMetaShift
	return r.h.ctl.Or(won)&won == 0
}
