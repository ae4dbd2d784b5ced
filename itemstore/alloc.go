package itemstore

import (
	"errors"
	"fmt"
)

// Alloc allocates an item for key with room for a valueLen-byte value, in
// state Writing: its header (hash, flags, exptime, cas, access time now)
// and key are written, nobody else can see it, and the caller holds the one
// reference. The caller writes the value through Ref.Value, then calls Link
// to publish it or Abort to free it. exptime and now are unix seconds
// (exptime 0: never expires).
//
// The chunk comes from the class's free list, else from a never-used chunk
// (of a page mapped while the memory limit allows, or of a page moved to
// the class from another one, see move.go), else from the class's CLOCK
// sweep. Every item that makes room — evicted by the sweep, or in a page
// moved between classes (by the automove policy, a pending Reassign, or a
// lowered memory limit) — is appended to victims; the caller must delete
// every victim from the hash index (see Victim), also when Alloc fails.
// Errors wrap ErrKeyLength, ErrTooLarge, ErrOutOfMemory or ErrClosed, or
// report a failed mmap. Cost: the class mutex, a few atomic operations,
// and the key copy; at times an mmap, a sweep or a page move (a pass over
// one page's chunks), and, for a class that cannot store at all while
// every page of the other classes is busy, waits of up to 1.5 ms in all.
func (s *Store) Alloc(hash uint64, key []byte, valueLen int, flags uint32, exptime int64, cas uint64, now int64, victims []Victim) (Ref, []Victim, error) {
	ci, err := s.classIndex(len(key), valueLen)
	if err != nil {
		return Ref{}, victims, fmt.Errorf("itemstore: alloc of %d-byte key, %d-byte value: %w", len(key), valueLen, err)
	}
	c := s.classes[ci]
	if s.slabs.work.Load() {
		victims = s.housekeep(now, victims)
	}
	c.mu.Lock()
	h, loc, p, victims, err := s.claim(c, now, victims)
	if err != nil {
		c.mu.Unlock()
		if errors.Is(err, ErrOutOfMemory) {
			c.outOfMemory.Add(1)
			return Ref{}, victims, fmt.Errorf("itemstore: alloc of %d bytes in class %d: %w", itemSize(len(key), valueLen), c.id, err)
		}
		return Ref{}, victims, fmt.Errorf("itemstore: alloc in class %d: %w", c.id, err)
	}
	gen := (ctlGen(h.ctl.Load()) + 1) & ctlGenMask
	h.ctl.Store(ctlFor(gen, stateWriting, 1))
	c.mu.Unlock()

	h.hash.Store(hash)
	h.cas = cas
	h.exptime.Store(exptime)
	h.atime.Store(clampTime(now))
	h.flags = flags
	h.vlen = uint32(valueLen)
	h.klen = uint8(len(key))
	copy(h.key(), key)
	return Ref{p: p, h: h, loc: loc, gen: gen}, victims, nil
}

// claim returns a chunk of class c for a new item, Free or Dead and
// unreferenced, with c.mu held on entry and on return: c.take, else a page
// moved from another class when the policy wants one (moveWanted), else
// the CLOCK sweep, else, when every chunk of the class is being written or
// referenced (values in flight), a page from a class that can spare one.
// Errors: ErrClosed, ErrOutOfMemory (with the class's page count), or a
// failed mmap. Victims are appended.
func (s *Store) claim(c *class, now int64, victims []Victim) (*header, uint32, *page, []Victim, error) {
	if s.closed.Load() {
		return nil, 0, nil, victims, ErrClosed
	}
	h, loc, p, ok, err := c.take()
	if !ok && err == nil && s.moveWanted(c, now) {
		if victims, err = s.moveUnlocked(c, now, false, victims); err != nil {
			return nil, 0, nil, victims, err
		}
		h, loc, p, ok, err = c.take()
	}
	if err != nil || ok {
		return h, loc, p, victims, err
	}
	if h, loc, p, victims, ok = c.evict(now, victims); ok {
		return h, loc, p, victims, nil
	}
	if s.slabs.reassign && len(c.pages) > 0 {
		// Every chunk is in use by a writer or a reader: the class needs
		// more chunks than it has, whatever the ages say.
		if victims, err = s.moveUnlocked(c, now, true, victims); err != nil {
			return nil, 0, nil, victims, err
		}
		if h, loc, p, ok, err = c.take(); ok || err != nil {
			return h, loc, p, victims, err
		}
		if h, loc, p, victims, ok = c.evict(now, victims); ok {
			return h, loc, p, victims, nil
		}
	}
	return nil, 0, nil, victims, fmt.Errorf("%d pages, none free: %w", len(c.pages), ErrOutOfMemory)
}

// moveUnlocked runs moveTo for class c, whose mu the caller holds: it
// unlocks it for the move and locks it again, failing with ErrClosed if
// the store was closed meanwhile.
func (s *Store) moveUnlocked(c *class, now int64, urgent bool, victims []Victim) ([]Victim, error) {
	c.mu.Unlock()
	victims = s.moveTo(c, now, urgent, victims)
	c.mu.Lock()
	if s.closed.Load() {
		return victims, ErrClosed
	}
	return victims, nil
}

// Link publishes an item the caller allocated: Writing becomes Linked, so
// Acquire of its location succeeds. The caller keeps its reference and
// must Release it. Link panics if r is not a Writing item from Alloc. Cost:
// a compare-and-swap and four counter updates.
func (s *Store) Link(r Ref) {
	h := r.h
	if ct := h.ctl.Load(); ctlGen(ct) != r.gen || ctlState(ct) != stateWriting {
		panic("itemstore: link of an item that is not being written")
	}
	// Counted before it is visible, so that an Unlink racing with the
	// publication never makes the counts negative.
	c := r.p.c
	c.items.Add(1)
	c.itemBytes.Add(h.size())
	c.links.Add(1)
	r.p.live.Add(1)
	for {
		// Only the owner changes a Writing item's control word (Touch,
		// SetMeta), so this loop retries at most a few times.
		ct := h.ctl.Load()
		if h.ctl.CompareAndSwap(ct, withState(ct, stateLinked)) {
			return
		}
	}
}

// Abort frees an item the caller allocated and has not linked: Writing
// becomes Free and the caller's reference is gone. Abort panics if r is
// not a Writing item from Alloc. Cost: a compare-and-swap and the class
// mutex.
func (s *Store) Abort(r Ref) {
	h := r.h
	for {
		ct := h.ctl.Load()
		if ctlGen(ct) != r.gen || ctlState(ct) != stateWriting || ctlRefs(ct) != 1 {
			panic("itemstore: abort of an item that is not being written")
		}
		if h.ctl.CompareAndSwap(ct, withState(ct, stateDead)-1) {
			break
		}
	}
	r.p.c.free(r.p, h, r.loc)
}
