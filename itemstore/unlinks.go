package itemstore

import (
	"cmp"
	"slices"
)

// Unlinks unlinks items as Store.Unlink does, but keeps the chunks it frees
// until Flush, which lists them on their classes' free lists under one
// lock of each class. It is for a goroutine that unlinks many items at a
// time (a server's index scheduler unlinking the items its updates
// replaced), whose lock per freed chunk would otherwise contend with the
// allocations of every connection. Until Flush a chunk so kept is Dead and
// unreferenced: nobody can acquire, unlink or allocate it, and a page move
// leaves it (as it leaves any free waiting for the lock). One goroutine
// uses an Unlinks at a time; the zero value is not usable (Store.Unlinks).
type Unlinks struct {
	s     *Store
	frees []keptFree
}

// keptFree is a chunk an Unlinks freed and has not yet listed.
type keptFree struct {
	p   *page
	h   *header
	loc uint32
}

// Unlinks returns an empty Unlinks of s.
func (s *Store) Unlinks() *Unlinks { return &Unlinks{s: s} }

// Unlink is Store.Unlink, except that a chunk the unlink frees waits for
// Flush. Cost: two compare-and-swaps; no lock.
func (u *Unlinks) Unlink(loc uint32, hash uint64) bool {
	return u.UnlinkMatch(loc, hash, ^uint64(0))
}

// UnlinkMatch is Unlink of the Linked item at loc whose key hash equals
// hash in the bits of mask, whatever its other bits (mask 0: any Linked
// item): for a location whose key the caller knows only in part, such as
// a hash index's dropped cell, which holds a signature of the key. Cost:
// two compare-and-swaps; no lock.
func (u *Unlinks) UnlinkMatch(loc uint32, hash, mask uint64) bool {
	r, ok := u.s.killMatch(loc, hash, mask)
	if !ok {
		return false
	}
	if r.releaseKept() {
		u.frees = append(u.frees, keptFree{p: r.p, h: r.h, loc: r.loc})
	}
	return true
}

// Kept returns how many freed chunks wait for Flush.
func (u *Unlinks) Kept() int { return len(u.frees) }

// Flush lists every chunk kept since the last Flush on its class's free
// list. Cost: a sort of the kept chunks by class and one lock of each
// class among them.
func (u *Unlinks) Flush() {
	if len(u.frees) == 0 {
		return
	}
	slices.SortFunc(u.frees, func(a, b keptFree) int { return cmp.Compare(a.p.c.id, b.p.c.id) })
	for i := 0; i < len(u.frees); {
		c := u.frees[i].p.c
		c.mu.Lock()
		for ; i < len(u.frees) && u.frees[i].p.c == c; i++ {
			f := u.frees[i]
			c.freeLocked(f.p, f.h, f.loc)
		}
		c.mu.Unlock()
	}
	clear(u.frees)
	u.frees = u.frees[:0]
}
