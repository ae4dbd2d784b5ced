package server

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/internal/reuse"
	"github.com/warpkv/warpkv/itemstore"
	"github.com/warpkv/warpkv/kv"
)

// stripeOf returns the write lock of a key hash.
func stripeOf(h uint64) int { return int(h >> 52) } // 12 bits: stripes

// lockRun takes the stripe locks of hashes in increasing order (so that
// runs never deadlock) and records them in sc.locks for unlockRun.
func (e *Engine) lockRun(sc *scratch, hashes []uint64) {
	sc.locks = sc.locks[:0]
	for _, h := range hashes {
		sc.locks = append(sc.locks, stripeOf(h))
	}
	slices.Sort(sc.locks)
	sc.locks = slices.Compact(sc.locks)
	e.relock(sc)
}

// relock takes the locks lockRun recorded again, after unlockRun.
func (e *Engine) relock(sc *scratch) {
	for _, l := range sc.locks {
		e.locks[l].Lock()
	}
}

func (e *Engine) unlockRun(sc *scratch) {
	for _, l := range sc.locks {
		e.locks[l].Unlock()
	}
}

// doWrites executes a run of writes to distinct keys (hashes in
// sc.hashes). It finds the present items of the ops that need them
// (current), then, holding the keys' stripe locks only for this CPU work,
// has kv.Apply decide each op, writes and links the new items, records
// them in the pending table and queues one index update per shard
// (deletes of removed and evicted entries, inserts of the new items). It
// returns without waiting for the updates: the pending table answers for
// the keys until the schedulers have applied them (completeUpdate), so a
// client still reads its own writes. Locations the index drops are
// unlinked from the store then, so no item is orphaned.
func (e *Engine) doWrites(ops []kv.Op, sc *scratch) {
	t := e.prof.start()
	n := len(ops)
	hashes := sc.hashes[:n]
	reuse.Resize(&sc.cur, n)
	reuse.Resize(&sc.curPend, n)
	clear(sc.cur)
	clear(sc.curPend)
	if needSearch(ops) {
		if err := e.current(ops, sc); err != nil {
			failAll(ops, nil, err)
			return
		}
		e.prof.lap(stWriteLookup, &t)
	} else {
		e.lockRun(sc, hashes)
	}
	now := e.clock()
	fs := e.flushState()
	reuse.Resize(&sc.ureqs, len(e.shards))
	for i := range ops {
		op, h := &ops[i], hashes[i]
		cur, ok := sc.cur[i], sc.cur[i].Valid()
		var curItem *kv.Item
		if ok {
			it := item(cur)
			curItem = &it
		}
		eff := kv.Apply(op, curItem, now, sc.digits[:0])
		e.countWrite(op)
		if eff.SetExpiry && ok {
			cur.SetExptime(eff.Exptime)
			op.Result.CAS, op.Result.Exptime = cur.CAS(), eff.Exptime
			if op.Kind == kv.Touch { // memcached's touch bumps the item as a fetch does
				cur.Touch(now)
			}
		}
		if eff.Write {
			fresh, err := e.write(op, h, eff, now, sc, cur)
			if err == nil {
				e.pendingPut(sc, h, pendingEntry(fresh.Loc(), false))
				u := e.updateFor(sc, h)
				u.insHashes = append(u.insHashes, h)
				u.insLocs = append(u.insLocs, fresh.Loc())
				u.insRefs = append(u.insRefs, fresh)
				e.inflightItems.Add(1)
			} else {
				// As memcached: a set that cannot be stored removes the
				// key's old item, so stale data does not outlive it.
				if op.Kind == kv.Set && !ok && !needSearch(ops[i:i+1]) {
					// A plain set did not look for its present item.
					cur, ok = e.currentLocked(h, op.Key, now, &fs)
					sc.cur[i] = cur
					sc.curPend[i] = ok && e.isPending(h)
				}
				eff.Remove = op.Kind == kv.Set && ok
			}
		}
		if eff.Remove && ok {
			e.pendingPut(sc, h, pendingEntry(cur.Loc(), true))
			u := e.updateFor(sc, h)
			u.delHashes = append(u.delHashes, h)
			u.delLocs = append(u.delLocs, cur.Loc())
			u.rmRefs = append(u.rmRefs, cur)
			u.barrier = u.barrier || sc.curPend[i]
			sc.cur[i] = itemstore.Ref{} // the update holds it until applied
			e.inflightItems.Add(1)
		}
	}
	e.queueUpdates(sc)
	e.unlockRun(sc)
	for i := range ops {
		if sc.cur[i].Valid() {
			sc.cur[i].Release()
		}
	}
	clear(sc.cur)
	e.prof.lap(stWriteApply, &t)
}

// needSearch reports whether a run of writes needs the present items: all
// but plain sets do (a set replaces whatever is there, and the index
// reports the location it overwrote, which is then unlinked).
func needSearch(ops []kv.Op) bool {
	for i := range ops {
		if op := &ops[i]; op.Kind != kv.Set || op.HasCAS || op.TooLarge {
			return true
		}
	}
	return false
}

// optimisticTries is how many times current searches without the keys'
// locks before it searches holding them.
const optimisticTries = 2

// current finds the present item of every op of a write run that needs it
// (all but plain sets: needSearch), leaves it held in sc.cur (with
// sc.curPend set when it came from the pending table) and returns with the
// run's stripe locks held.
//
// A key with a pending entry needs no search. For the others the index is
// searched without holding the locks, so a key is never locked across a
// GPU batch: before the search it notes the applied counters of their
// pending stripes; after it, under the locks, a key still without a pending
// entry whose stripe's counter has not moved had no update applied since
// the search began (any applied write of the key removes the key's entry
// on completion, moving the counter), so the search result is its state
// now. Otherwise it tries again; after optimisticTries it searches holding
// the locks, where, with no pending entry, no write of the key is in
// flight. Cost: usually one search batch, none when all keys are pending.
func (e *Engine) current(ops []kv.Op, sc *scratch) error {
	n := len(ops)
	hashes := sc.hashes[:n]
	e.lockRun(sc, hashes)
	now := e.clock()
	fs := e.flushState()
	reuse.Resize(&sc.searched, n)
	reuse.Resize(&sc.applied, n)
	reuse.Resize(&sc.slocs, n)
	clear(sc.searched)
	for try := 0; ; try++ {
		sc.qh, sc.qi = sc.qh[:0], sc.qi[:0]
		for i := range ops {
			if !needSearch(ops[i : i+1]) {
				continue
			}
			if sc.cur[i].Valid() {
				sc.cur[i].Release()
				sc.cur[i] = itemstore.Ref{}
			}
			sc.curPend[i] = false
			h := hashes[i]
			if w, ok := e.pend.lookup(h); ok {
				sc.curPend[i] = !entryDead(w)
				if !entryDead(w) {
					sc.cur[i], _ = e.lookup(entryLoc(w), h, ops[i].Key, now, &fs)
				}
				continue
			}
			if sc.searched[i] && e.pend.appliedOf(h) == sc.applied[i] {
				sc.cur[i], _ = e.lookup(sc.slocs[i], h, ops[i].Key, now, &fs)
				continue
			}
			sc.qh = append(sc.qh, h)
			sc.qi = append(sc.qi, i)
		}
		if len(sc.qh) == 0 {
			return nil
		}
		locked := try >= optimisticTries
		for _, i := range sc.qi {
			sc.applied[i] = e.pend.appliedOf(hashes[i])
			sc.searched[i] = true
		}
		if try > 0 {
			e.counts.optimisticRetries.Add(1)
		}
		if !locked {
			e.unlockRun(sc)
		} else {
			e.counts.lockedSearches.Add(1)
		}
		reuse.Resize(&sc.ql, len(sc.qh))
		err := e.search(sc, sc.qh, sc.ql)
		// Done with the batch before blocking on the locks: the results
		// are validated under them (a location dropped since the search
		// moves the applied counter, or was an eviction or a displacement,
		// after which the key is absent anyway).
		e.release(sc)
		if !locked {
			e.relock(sc)
		}
		if err != nil {
			e.unlockRun(sc)
			e.releaseCur(sc, n)
			return err
		}
		for k, i := range sc.qi {
			sc.slocs[i] = sc.ql[k]
		}
		if locked {
			// The locks were held through the search: its results are
			// final.
			for _, i := range sc.qi {
				sc.applied[i] = e.pend.appliedOf(hashes[i])
			}
		}
	}
}

// releaseCur releases the items current left held.
func (e *Engine) releaseCur(sc *scratch, n int) {
	for i := range n {
		if sc.cur[i].Valid() {
			sc.cur[i].Release()
			sc.cur[i] = itemstore.Ref{}
		}
	}
}

// currentLocked returns the present item of one key whose stripe lock the
// caller holds: from the pending table, else from a search made under the
// lock (final: with no pending entry no write of the key is in flight).
func (e *Engine) currentLocked(h uint64, key []byte, now int64, fs *kv.FlushState) (itemstore.Ref, bool) {
	if w, ok := e.pend.lookup(h); ok {
		if entryDead(w) {
			return itemstore.Ref{}, false
		}
		return e.lookup(entryLoc(w), h, key, now, fs)
	}
	e.counts.lockedSearches.Add(1)
	loc, err := e.searchOne(h)
	if err != nil {
		return itemstore.Ref{}, false
	}
	return e.lookup(loc, h, key, now, fs)
}

// isPending reports whether h has a pending insert.
func (e *Engine) isPending(h uint64) bool {
	w, ok := e.pend.lookup(h)
	return ok && !entryDead(w)
}

// pendingPut records entry w for h. When h's pending stripe is full, it
// first queues the run's updates built so far (the entries waiting may be
// theirs) and waits for the schedulers to apply some, applying them
// itself on shards with inline updates whose role is free (overdue.go:
// the round takes no key lock).
func (e *Engine) pendingPut(sc *scratch, h, w uint64) {
	if e.pend.put(h, w) {
		return
	}
	e.counts.pendingFull.Add(1)
	e.queueUpdates(sc)
	for _, s := range e.shards {
		if n := s.applyOverdue(0, true); n > 0 {
			e.counts.updateInline.Add(uint64(n))
		} else {
			s.hurry()
		}
	}
	for !e.pend.put(h, w) {
		e.pend.waitRoom(h)
	}
}

// updateFor returns the run's update list for h's shard.
func (e *Engine) updateFor(sc *scratch, h uint64) *updateList {
	return &sc.ureqs[e.shardOf(h)]
}

// queueUpdates appends the run's updates built so far to their shards'
// queues, in the key locks' order: the index applies each key's updates in
// that order.
func (e *Engine) queueUpdates(sc *scratch) {
	for s := range sc.ureqs {
		u := &sc.ureqs[s]
		if u.jobs() > 0 {
			e.shards[s].update(u)
		}
		u.reset()
	}
}

// searchOne looks up one hash. Cost: a wait for its shard's next search
// batch.
func (e *Engine) searchOne(h uint64) (uint32, error) {
	out := [1]uint32{}
	hs := [1]uint64{h}
	wake := make(chan struct{}, 1)
	err := e.shards[e.shardOf(h)].search(hs[:], out[:], wake, nil)
	return out[0], err
}

// write allocates, fills and links the new item of a Write effect and
// returns it, held; evicted items' index entries join the run's updates.
// cur is the present item (InPlace counters keep its access time). On
// failure it sets the op's status (TooLarge, NoMemory or NotStored).
func (e *Engine) write(op *kv.Op, h uint64, eff kv.Effect, now int64, sc *scratch, cur itemstore.Ref) (itemstore.Ref, error) {
	if kv.JoinedTooLarge(op, eff, e.opts.ItemSizeMax) {
		// memcached cannot allocate a joined item over its item size
		// limit (header, key and value counted, as for a set): NOT_STORED,
		// the old item kept.
		op.Result = kv.Result{Status: kv.NotStored}
		return itemstore.Ref{}, fmt.Errorf("%v of %d bytes to %q: %w", op.Kind, eff.Len(), op.Key, itemstore.ErrTooLarge)
	}
	cas := e.nextCAS()
	r, victims, err := e.store.Alloc(h, op.Key, eff.Len(), eff.Flags, eff.Exptime, cas, now, sc.victims[:0])
	sc.victims = victims
	for _, v := range victims {
		u := e.updateFor(sc, v.Hash)
		u.delHashes = append(u.delHashes, v.Hash)
		u.delLocs = append(u.delLocs, v.Loc)
		u.rmRefs = append(u.rmRefs, itemstore.Ref{}) // already dead: nothing to unlink
	}
	e.counts.evictions.Add(uint64(len(victims)))
	switch {
	case err != nil && (op.Kind == kv.Append || op.Kind == kv.Prepend):
		// memcached answers NOT_STORED when the joined item cannot be
		// allocated.
		op.Result = kv.Result{Status: kv.NotStored}
		return r, err
	case errors.Is(err, itemstore.ErrTooLarge):
		op.Result = kv.Result{Status: kv.TooLarge}
		return r, err
	case err != nil:
		op.Result = kv.Result{Status: kv.NoMemory}
		return r, err
	}
	v := r.Value()
	copy(v[copy(v, eff.Parts[0]):], eff.Parts[1])
	r.SetMeta(eff.Meta)
	if eff.InPlace && cur.Valid() && cur.Fetched() {
		r.Touch(cur.LastAccess())
	}
	e.store.Link(r)
	op.Result.CAS, op.Result.Exptime = cas, eff.Exptime
	e.counts.items.Add(1)
	return r, nil
}

// completeUpdate finishes an update list once its shard has applied it
// (called by the shard's scheduler): locations the inserts dropped are
// unlinked, the writes' pending entries removed, and the items the list
// held released.
func (e *Engine) completeUpdate(u *updateList) {
	u.unlinks = u.unlinks[:0]
	for _, d := range u.drops {
		e.dropped(u, d)
	}
	failed := false
	for j, h := range u.insHashes {
		fresh := u.insRefs[j]
		if u.errAt(j, false) != nil {
			// Not indexed: it must not stay linked.
			e.store.Unlink(fresh.Loc(), h)
			e.counts.updateErrors.Add(1)
			failed = true
		}
		e.pend.remove(h, pendingEntry(fresh.Loc(), false))
		fresh.Release()
		e.inflightItems.Add(-1)
	}
	for j, h := range u.delHashes {
		r := u.rmRefs[j]
		if !r.Valid() {
			continue // an evicted item's entry
		}
		if u.errAt(j, true) != nil {
			e.store.Unlink(r.Loc(), h) // acknowledged as removed: it must not come back
			e.counts.updateErrors.Add(1)
			failed = true
		} else {
			u.unlinks = append(u.unlinks, pendingUnlink{loc: r.Loc(), hash: h, match: matchHash})
		}
		e.pend.remove(h, pendingEntry(r.Loc(), true))
		r.Release()
		e.inflightItems.Add(-1)
	}
	if len(u.unlinks) > 0 {
		// Every job of a list is of one shard (queueUpdates).
		e.shards[e.shardOf(u.anyHash())].deferUnlinks(u.unlinks)
		clear(u.unlinks)
		u.unlinks = u.unlinks[:0]
	}
	if failed {
		e.log.Error("server: index update failed; its items were unlinked", "err", errors.Join(u.errs...))
	}
}

// dropped frees the item behind a location an insert made the index drop.
// The job's own new item displaced out of the table cannot be found: it is
// unlinked at once (its set was acknowledged; the key now misses, as after
// an eviction). Any other location (an overwritten key's old item, a cell
// pushed out by displacement) is unlinked later, after the shard's next
// search batch (see shard.deferUnlinks; queued with the list's other
// unlinks by completeUpdate), so that a read whose search found it just
// before the update can still read it.
func (e *Engine) dropped(u *updateList, d hashindex.Dropped) {
	e.counts.indexDrops.Add(1)
	h := u.insHashes[d.Job]
	if d.Loc == u.insLocs[d.Job] {
		if d.Reason == hashindex.Displaced {
			e.store.Unlink(d.Loc, h)
			e.counts.selfDisplaced.Add(1)
		}
		return
	}
	p := pendingUnlink{loc: d.Loc, hash: h, match: matchSignature}
	if d.Reason == hashindex.Displaced {
		p.match = matchAny
	}
	u.unlinks = append(u.unlinks, p)
}

// unlinker returns a shard's unlink function (shardHooks.unlink), with the
// shard's own itemstore.Unlinks: the chunks a list's unlinks free go back
// to their classes with one lock of each class a list, not one a chunk,
// so the scheduler does not contend with every connection's allocations
// once per replaced item.
func (e *Engine) unlinker() func([]pendingUnlink) {
	u := e.store.Unlinks()
	return func(ps []pendingUnlink) { e.unlinkPending(u, ps) }
}

// unlinkPending unlinks the items of locations the index no longer holds
// (called by a shard's scheduler, with the shard's Unlinks). An exact
// match needs the item's hash; otherwise the location must still hold a
// linked item whose signature is the dropped cell's (an overwrite: the
// inserted key's) or, for a displaced cell, any linked item. An evicted
// item's chunk is reused at once, but its index delete joins the same
// update as the new item's insert and deletes run first, so no dropped
// cell points at a chunk a linked item of another key reuses; a reader
// meanwhile compares keys. Cost: two compare-and-swaps an item, then one
// lock of each class the freed chunks are in.
func (e *Engine) unlinkPending(u *itemstore.Unlinks, ps []pendingUnlink) {
	defer u.Flush()
	for _, p := range ps {
		u.UnlinkMatch(p.loc, p.hash, p.mask())
	}
}

// mask returns the bits of the key hash the item at p.loc must share with
// p.hash to be unlinked: all of them (matchHash), the signature's (the
// high 32, as the index keeps them), or none (matchAny).
func (p pendingUnlink) mask() uint64 {
	switch p.match {
	case matchHash:
		return ^uint64(0)
	case matchSignature:
		return 0xffffffff << 32
	}
	return 0
}

// countWrite updates the command counters of a decided write.
func (e *Engine) countWrite(op *kv.Op) {
	c := &e.counts
	st := op.Result.Status
	switch op.Kind {
	case kv.Set, kv.Add, kv.Replace, kv.Append, kv.Prepend:
		c.sets.Add(1)
		if op.HasCAS {
			switch st {
			case kv.Stored:
				c.casHits.Add(1)
			case kv.Exists:
				c.casBadval.Add(1)
			case kv.NotFound:
				c.casMisses.Add(1)
			}
		}
	case kv.Touch:
		c.touches.Add(1)
		if st == kv.Touched {
			c.touchHits.Add(1)
		}
	case kv.Delete:
		hitOrMiss(st == kv.Deleted, &c.deleteHits, &c.deleteMisses)
	case kv.Incr:
		hitOrMiss(st != kv.NotFound, &c.incrHits, &c.incrMisses)
	case kv.Decr:
		hitOrMiss(st != kv.NotFound, &c.decrHits, &c.decrMisses)
	}
}

// hitOrMiss counts one hit or one miss.
func hitOrMiss(hit bool, hits, misses *atomic.Uint64) {
	if hit {
		hits.Add(1)
	} else {
		misses.Add(1)
	}
}
