package server

import (
	"errors"
	"runtime"
	"slices"

	"warpkv/hashindex"
	"warpkv/itemstore"
	"warpkv/kv"
)

// stripeOf returns the write lock of a key hash.
func stripeOf(h uint64) int { return int(h >> 52) } // 12 bits: stripes

// lockRun takes the stripe locks of sc.hashes[:n] in increasing order
// (so that runs never deadlock) and records them for unlockRun.
func (e *Engine) lockRun(sc *scratch, n int) {
	sc.locks = sc.locks[:0]
	for _, h := range sc.hashes[:n] {
		sc.locks = append(sc.locks, stripeOf(h))
	}
	slices.Sort(sc.locks)
	sc.locks = slices.Compact(sc.locks)
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
// sc.hashes): under the keys' locks, one search finds the present items,
// kv.Apply decides each op, new items are written and linked, and one
// update per shard deletes removed and evicted entries and inserts the new
// ones; the run returns when every shard has applied it. Locations the
// index drops are unlinked from the store, so no item is orphaned.
func (e *Engine) doWrites(ops []kv.Op, sc *scratch) {
	n := len(ops)
	e.lockRun(sc, n)
	locked := true
	defer func() {
		if locked {
			e.unlockRun(sc)
		}
	}()
	plain := !needSearch(ops)
	if !plain {
		e.waitPending(sc)
		if err := e.search(sc, n); err != nil {
			failAll(ops, err)
			return
		}
	} else {
		sc.locs = grow(sc.locs, n)
		for i := range sc.locs {
			sc.locs[i] = notLoc
		}
	}
	now := e.clock()
	fs := e.flushState()
	ns := len(e.shards)
	sc.ureqs = grow(sc.ureqs, ns)
	for s := range sc.ureqs {
		sc.ureqs[s].reset()
		sc.ureqs[s].w = &sc.w
	}
	sc.cur = grow(sc.cur, n)
	sc.fresh = grow(sc.fresh, n)
	sc.removed = grow(sc.removed, n)
	insOp := make([][]int, ns) // per shard: the op of each insert job
	for i := range ops {
		op, h := &ops[i], sc.hashes[i]
		sc.cur[i], sc.fresh[i], sc.removed[i] = itemstore.Ref{}, itemstore.Ref{}, notLoc
		var cur *kv.Item
		r, ok := e.lookup(sc.locs[i], h, op.Key, now, &fs)
		if ok {
			sc.cur[i] = r
			it := item(r)
			cur = &it
		}
		eff := kv.Apply(op, cur, now, sc.digits[:0])
		e.countWrite(op)
		if eff.SetExpiry && ok {
			r.SetExptime(eff.Exptime)
			op.Result.CAS, op.Result.Exptime = r.CAS(), eff.Exptime
			if op.Kind == kv.Touch { // memcached's touch bumps the item as a fetch does
				r.Touch(now)
			}
		}
		if eff.Write {
			if err := e.write(op, h, eff, now, sc, i); err != nil {
				// As memcached: a set that cannot be stored removes the
				// key's old item, so stale data does not outlive it.
				if op.Kind == kv.Set && sc.locs[i] == notLoc && !ok {
					// A plain set did not search: look now, once the
					// stripes' pending sets are in, and keep the locks
					// until this run's update is.
					plain = false
					e.waitPending(sc)
					if loc, err := e.searchOne(h); err == nil {
						r, ok = e.lookup(loc, h, op.Key, now, &fs)
						sc.cur[i] = r
					}
				}
				eff.Remove = op.Kind == kv.Set && ok
			} else {
				s := e.shardOf(h)
				u := &sc.ureqs[s]
				u.insHashes = append(u.insHashes, h)
				u.insLocs = append(u.insLocs, sc.fresh[i].Loc())
				insOp[s] = append(insOp[s], i)
			}
		}
		if eff.Remove && ok {
			u := &sc.ureqs[e.shardOf(h)]
			u.delHashes = append(u.delHashes, h)
			u.delLocs = append(u.delLocs, r.Loc())
			sc.removed[i] = r.Loc()
		}
	}
	for s := range sc.ureqs {
		if sc.ureqs[s].jobs() > 0 {
			e.shards[s].update(&sc.ureqs[s])
		}
	}
	if plain {
		// Plain sets need no present item, so once their inserts are
		// queued (in key-lock order: the index applies them in that
		// order) the keys' locks can go. Writes that read the present
		// item wait for the stripes' pending sets first (waitPending).
		for _, l := range sc.locks {
			e.pending[l].Add(1)
		}
		e.unlockRun(sc)
		locked = false
		defer func() {
			for _, l := range sc.locks {
				e.pending[l].Add(-1)
			}
		}()
	}
	sc.w.wg.Wait()
	e.finishUpdates(ops, sc, insOp)
}

// waitPending waits until the run's stripes have no plain sets queued but
// not yet applied, so that a search sees them. The run holds the stripes'
// locks, so no new ones come. Cost: at most one update batch.
func (e *Engine) waitPending(sc *scratch) {
	for _, l := range sc.locks {
		for e.pending[l].Load() > 0 {
			runtime.Gosched()
		}
	}
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

// searchOne looks up one hash. Cost: a wait for its shard's next search
// batch.
func (e *Engine) searchOne(h uint64) (uint32, error) {
	var w waiter
	out := [1]uint32{}
	hs := [1]uint64{h}
	req := searchReq{hashes: hs[:], out: out[:], w: &w}
	e.shards[e.shardOf(h)].search(&req)
	w.wg.Wait()
	return out[0], req.err
}

// write allocates, fills and links the new item of a Write effect, leaving
// it held in sc.fresh[i]; evicted items' index entries join the updates. On
// failure it sets the op's status (TooLarge or NoMemory).
func (e *Engine) write(op *kv.Op, h uint64, eff kv.Effect, now int64, sc *scratch, i int) error {
	cas := e.nextCAS()
	r, victims, err := e.store.Alloc(h, op.Key, eff.Len(), eff.Flags, eff.Exptime, cas, now, sc.victims[:0])
	sc.victims = victims
	for _, v := range victims {
		u := &sc.ureqs[e.shardOf(v.Hash)]
		u.delHashes = append(u.delHashes, v.Hash)
		u.delLocs = append(u.delLocs, v.Loc)
	}
	e.counts.evictions.Add(uint64(len(victims)))
	switch {
	case err != nil && (op.Kind == kv.Append || op.Kind == kv.Prepend):
		// memcached answers NOT_STORED when the joined item cannot be
		// allocated.
		op.Result = kv.Result{Status: kv.NotStored}
		return err
	case errors.Is(err, itemstore.ErrTooLarge):
		op.Result = kv.Result{Status: kv.TooLarge}
		return err
	case err != nil:
		op.Result = kv.Result{Status: kv.NoMemory}
		return err
	}
	v := r.Value()
	copy(v[copy(v, eff.Parts[0]):], eff.Parts[1])
	r.SetMeta(eff.Meta)
	if eff.InPlace && sc.cur[i].Valid() && sc.cur[i].Fetched() {
		r.Touch(sc.cur[i].LastAccess())
	}
	e.store.Link(r)
	sc.fresh[i] = r
	op.Result.CAS, op.Result.Exptime = cas, eff.Exptime
	e.counts.items.Add(1)
	return nil
}

// finishUpdates, once the run's updates are applied, has the locations
// the index no longer holds unlinked and releases the run's items.
func (e *Engine) finishUpdates(ops []kv.Op, sc *scratch, insOp [][]int) {
	for s := range sc.ureqs {
		u := &sc.ureqs[s]
		if u.err != nil {
			for _, i := range insOp[s] {
				ops[i].Result = kv.Result{Status: kv.Failed, Err: u.err}
			}
			continue
		}
		for _, d := range u.drops {
			i := insOp[s][d.Job]
			e.dropped(&ops[i], d, sc.hashes[i], sc.fresh[i])
		}
	}
	for i := range ops {
		if l := sc.removed[i]; l != notLoc {
			e.shards[e.shardOf(sc.hashes[i])].deferUnlink(pendingUnlink{loc: l, hash: sc.hashes[i], match: matchHash})
		}
		if sc.cur[i].Valid() {
			sc.cur[i].Release()
		}
		if sc.fresh[i].Valid() {
			sc.fresh[i].Release()
		}
		sc.cur[i], sc.fresh[i] = itemstore.Ref{}, itemstore.Ref{}
	}
}

// dropped frees the item behind a location an insert made the index drop.
// The op's own new item displaced out of the table cannot be found: it is
// unlinked at once and the op answers NoMemory, as a store that could not
// keep the item. Any other location (an overwritten key's old item, a cell
// pushed out by displacement) is unlinked later, after the shard's next
// search batch (see shard.deferUnlink), so that a read whose search found
// it just before the update can still read it.
func (e *Engine) dropped(op *kv.Op, d hashindex.Dropped, h uint64, fresh itemstore.Ref) {
	e.counts.indexDrops.Add(1)
	if fresh.Valid() && d.Loc == fresh.Loc() {
		if d.Reason == hashindex.Displaced {
			e.store.Unlink(d.Loc, h)
			op.Result = kv.Result{Status: kv.NoMemory}
			e.counts.selfDisplaced.Add(1)
		}
		return
	}
	p := pendingUnlink{loc: d.Loc, hash: h, match: matchSignature}
	if d.Reason == hashindex.Displaced {
		p.match = matchAny
	}
	e.shards[e.shardOf(h)].deferUnlink(p)
}

// unlinkPending unlinks the items of locations the index no longer holds
// (called by the shard schedulers). An exact match needs the item's hash;
// otherwise the location must still hold a linked item whose signature is
// the dropped cell's (an overwrite: the inserted key's) or, for a displaced
// cell, any linked item. An evicted item's chunk is reused at once, but its
// index delete joins the same update as the new item's insert and deletes
// run first, so no dropped cell points at a chunk a linked item of another
// key reuses; a reader meanwhile compares keys.
func (e *Engine) unlinkPending(ps []pendingUnlink) {
	for _, p := range ps {
		if p.match == matchHash {
			e.store.Unlink(p.loc, p.hash)
			continue
		}
		r, ok := e.store.Acquire(p.loc)
		if !ok {
			continue
		}
		victim := r.Hash()
		r.Release()
		if p.match == matchSignature && uint32(victim>>32) != uint32(p.hash>>32) {
			continue
		}
		e.store.Unlink(p.loc, victim)
	}
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
		if st == kv.Deleted {
			c.deleteHits.Add(1)
		} else {
			c.deleteMisses.Add(1)
		}
	case kv.Incr:
		if st == kv.NotFound {
			c.incrMisses.Add(1)
		} else {
			c.incrHits.Add(1)
		}
	case kv.Decr:
		if st == kv.NotFound {
			c.decrMisses.Add(1)
		} else {
			c.decrHits.Add(1)
		}
	}
}
