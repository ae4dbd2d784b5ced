package server

import (
	"fmt"
	"slices"
	"time"

	"warpkv/hashindex"
	"warpkv/itemstore"
	"warpkv/kv"
)

// scratch is the reusable memory of one Do call.
type scratch struct {
	hashes  []uint64 // per op of the group
	locs    []uint32 // per op: index search result
	order   []int    // op indices grouped by shard
	bounds  []int    // per shard: end of its run in order
	sh      []uint64 // hashes in shard order
	sl      []uint32 // search results in shard order
	sreqs   []searchReq
	ureqs   []updateReq
	w       waiter
	cur     []itemstore.Ref // per op: the present item, held
	fresh   []itemstore.Ref // per op: the new item, held until indexed
	removed []uint32        // per op: location to unlink after the index delete, or notLoc
	victims []itemstore.Victim
	digits  []byte
	locks   []int
	written []uint64 // hoistReads: hashes of the batch's written keys
	perm    []int    // hoistReads: the order of the ops
	tmpOps  []kv.Op  // the ops in that order
}

// notLoc marks "no location" in scratch slices.
const notLoc = hashindex.NotFound

// Do executes b's Ops in order (kv.Cache). Runs of consecutive Gets share
// one index search; runs of writes to distinct keys share one search and
// one update, holding their keys' locks. Cost: per run, one wait for the
// shard schedulers (up to the batch interval C for searches, 2C for
// updates), plus item copies.
func (e *Engine) Do(b *kv.Batch) error {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.closed {
		return errClosed
	}
	sc := e.scratch.Get().(*scratch)
	defer e.scratch.Put(sc)
	perm := e.hoistReads(b.Ops, sc)
	if perm == nil {
		e.runOps(b, b.Ops, sc)
		return nil
	}
	tmp := sc.tmpOps[:0]
	for _, i := range perm {
		tmp = append(tmp, b.Ops[i])
	}
	e.runOps(b, tmp, sc)
	for k, i := range perm {
		b.Ops[i].Result = tmp[k].Result
	}
	clear(tmp) // drop references to the batch's keys and values
	sc.tmpOps = tmp[:0]
	return nil
}

// hoistReads returns an order of ops that runs first every Get whose key
// no earlier op of the batch writes, then the other ops in batch order, or
// nil when that order is the batch order or the batch flushes. Running a
// Get before writes to other keys gives it the result it has in batch
// order, and it saves the Gets after a write their own wait for a search
// batch: a pipeline of gets with a set among them costs one search, not
// one per run. Cost: a hash per op and a scan of the written keys per Get.
func (e *Engine) hoistReads(ops []kv.Op, sc *scratch) []int {
	written := sc.written[:0]
	late := false // a Get follows a write
	for i := range ops {
		switch ops[i].Kind {
		case kv.Flush:
			return nil
		case kv.Get:
			late = late || len(written) > 0
		default:
			written = append(written, hashindex.Hash(ops[i].Key))
		}
	}
	sc.written = written
	if !late {
		return nil
	}
	perm := sc.perm[:0]
	seenWrite := 0
	for i := range ops {
		if ops[i].Kind != kv.Get {
			seenWrite++
			continue
		}
		if seenWrite == 0 || !slices.Contains(written[:seenWrite], hashindex.Hash(ops[i].Key)) {
			perm = append(perm, i)
		}
	}
	early := len(perm)
	for i := range ops {
		if ops[i].Kind != kv.Get || !slices.Contains(perm[:early], i) {
			perm = append(perm, i)
		}
	}
	sc.perm = perm
	return perm
}

// runOps executes ops in order, in runs: consecutive Gets, then
// consecutive writes to distinct keys, and flushes alone.
func (e *Engine) runOps(b *kv.Batch, ops []kv.Op, sc *scratch) {
	for i := 0; i < len(ops); {
		op := &ops[i]
		op.Result = kv.Result{}
		switch {
		case op.Kind == kv.Flush:
			e.doFlush(op)
			i++
		case op.Kind == kv.Get:
			j := i + 1
			for j < len(ops) && ops[j].Kind == kv.Get {
				ops[j].Result = kv.Result{}
				j++
			}
			start := time.Now()
			e.doReads(b, ops[i:j], sc)
			e.getLat.add(time.Since(start))
			i = j
		default:
			j := e.writeRun(ops, i, sc)
			start := time.Now()
			e.doWrites(ops[i:j], sc)
			e.setLat.add(time.Since(start))
			i = j
		}
	}
}

// writeRun returns the end of the run of writes that starts at ops[i]: the
// following non-Get, non-Flush ops up to the first whose key repeats one
// of the run's (so each key has one write per run). It leaves the run's
// key hashes in sc.hashes.
func (e *Engine) writeRun(ops []kv.Op, i int, sc *scratch) int {
	sc.hashes = sc.hashes[:0]
	j := i
	for ; j < len(ops) && ops[j].Kind != kv.Get && ops[j].Kind != kv.Flush; j++ {
		h := hashindex.Hash(ops[j].Key)
		if slices.Contains(sc.hashes, h) {
			break
		}
		ops[j].Result = kv.Result{}
		sc.hashes = append(sc.hashes, h)
	}
	return j
}

// doFlush records a flush_all. Items are invalidated lazily: readers check
// the flush state, and eviction reclaims their memory.
func (e *Engine) doFlush(op *kv.Op) {
	now := e.clock()
	e.flushMu.Lock()
	e.flush.Flush(op.Exptime, now, e.cas.Load()+1)
	e.flushMu.Unlock()
	e.counts.flushes.Add(1)
	op.Result.Status = kv.Flushed
}

// search looks up sc.hashes[:n] in their shards and leaves the locations
// in sc.locs. Cost: one wait for the slowest shard's next search batch.
func (e *Engine) search(sc *scratch, n int) error {
	sc.locs = grow(sc.locs, n)
	if len(e.shards) == 1 {
		if ok, err := e.searchInline(e.shards[0], sc.hashes[:n], sc.locs[:n]); ok {
			return err
		}
		sc.sreqs = grow(sc.sreqs, 1)
		r := &sc.sreqs[0]
		*r = searchReq{hashes: sc.hashes[:n], out: sc.locs, w: &sc.w}
		e.shards[0].search(r)
		sc.w.wg.Wait()
		return r.err
	}
	e.groupByShard(sc, n)
	sc.sl = grow(sc.sl, n)
	sc.sreqs = grow(sc.sreqs, len(e.shards))
	lo := 0
	for s, hi := range sc.bounds {
		r := &sc.sreqs[s]
		*r = searchReq{hashes: sc.sh[lo:hi], out: sc.sl[lo:hi], w: &sc.w}
		if hi > lo {
			e.shards[s].search(r)
		}
		lo = hi
	}
	sc.w.wg.Wait()
	for k, i := range sc.order {
		sc.locs[i] = sc.sl[k]
	}
	for s := range e.shards {
		if err := sc.sreqs[s].err; err != nil {
			return err
		}
	}
	return nil
}

// lookupLocked searches one key again under its write lock and returns
// its live item, held. Cost: a wait for its shard's next search batch.
func (e *Engine) lookupLocked(h uint64, key []byte, now int64, fs *kv.FlushState) (itemstore.Ref, bool) {
	l := &e.locks[stripeOf(h)]
	l.Lock()
	defer l.Unlock()
	loc, err := e.searchOne(h)
	if err != nil {
		return itemstore.Ref{}, false
	}
	e.counts.staleReads.Add(1)
	return e.lookup(loc, h, key, now, fs)
}

// groupByShard orders the first n hashes by shard (sc.order, sc.sh,
// sc.bounds).
func (e *Engine) groupByShard(sc *scratch, n int) {
	ns := len(e.shards)
	sc.bounds = grow(sc.bounds, ns)
	clear(sc.bounds)
	for _, h := range sc.hashes[:n] {
		sc.bounds[e.shardOf(h)]++
	}
	sum := 0
	for s := range sc.bounds {
		sum, sc.bounds[s] = sum+sc.bounds[s], sum // start offsets for now
	}
	sc.order = grow(sc.order, n)
	sc.sh = grow(sc.sh, n)
	for i, h := range sc.hashes[:n] {
		s := e.shardOf(h)
		sc.order[sc.bounds[s]] = i
		sc.sh[sc.bounds[s]] = h
		sc.bounds[s]++ // ends up as the run's end
	}
}

// lookup returns the live item for key at loc, held, or a zero Ref: the
// location must hold a linked item with the key's hash and bytes that has
// not expired or been flushed.
func (e *Engine) lookup(loc uint32, h uint64, key []byte, now int64, fs *kv.FlushState) (itemstore.Ref, bool) {
	r, ok, _ := e.lookupStale(loc, h, key, now, fs)
	return r, ok
}

// lookupStale is lookup that also reports whether the location no longer
// held the key's linked item (stale: a write replaced or removed it since
// the search, and its chunk may even hold another key's item now).
func (e *Engine) lookupStale(loc uint32, h uint64, key []byte, now int64, fs *kv.FlushState) (_ itemstore.Ref, ok, stale bool) {
	if loc == notLoc {
		return itemstore.Ref{}, false, false
	}
	r, ok := e.store.Acquire(loc)
	if !ok {
		return itemstore.Ref{}, false, true
	}
	if r.Hash() != h || string(r.Key()) != string(key) {
		// Another key's item: the chunk was freed and reused since the
		// search (or, rarely, another key has the same signature).
		r.Release()
		return itemstore.Ref{}, false, true
	}
	if !kv.Alive(r.Exptime(), now) {
		e.counts.expired.Add(1)
		r.Release()
		return itemstore.Ref{}, false, false
	}
	if !fs.Valid(r.CAS(), r.LastAccess(), now) {
		e.counts.flushed.Add(1)
		r.Release()
		return itemstore.Ref{}, false, false
	}
	return r, true, false
}

// item returns the kv view of a held item.
func item(r itemstore.Ref) kv.Item {
	return kv.Item{Value: r.Value(), Flags: r.Flags(), Exptime: r.Exptime(), CAS: r.CAS(), Meta: r.Meta(), Class: r.Class()}
}

// doReads executes a run of Gets: one search, then each hit's value is
// copied into the batch.
func (e *Engine) doReads(b *kv.Batch, ops []kv.Op, sc *scratch) {
	n := len(ops)
	sc.hashes = grow(sc.hashes, n)
	for i := range ops {
		sc.hashes[i] = hashindex.Hash(ops[i].Key)
	}
	now := e.clock()
	if err := e.search(sc, n); err != nil {
		failAll(ops, err)
		return
	}
	fs := e.flushState()
	var hits uint64
	for i := range ops {
		op := &ops[i]
		r, ok, stale := e.lookupStale(sc.locs[i], sc.hashes[i], op.Key, now, &fs)
		if stale {
			// A concurrent write replaced or removed the item after the
			// search. Search again under the key's write lock, where no
			// write of it is half done: a read that overlaps an overwrite
			// sees the old or the new value, never a miss.
			r, ok = e.lookupLocked(sc.hashes[i], op.Key, now, &fs)
		}
		if !ok {
			kv.Apply(op, nil, now, nil)
			continue
		}
		hits++
		cur := item(r)
		eff := kv.Apply(op, &cur, now, nil)
		res := &op.Result
		res.Value = b.AddValue(cur.Value)
		res.Flags, res.CAS, res.Exptime = cur.Flags, cur.CAS, cur.Exptime
		res.LastAccess, res.Fetched = r.LastAccess(), r.Fetched()
		res.Class = r.Class()
		hitMeta(r, eff, res)
		if eff.SetExpiry {
			r.SetExptime(eff.Exptime)
			res.Exptime = eff.Exptime
		}
		if !op.Peek {
			r.Touch(now)
		}
		r.Release()
	}
	e.counts.gets.Add(uint64(n))
	e.counts.getHits.Add(hits)
	if touched := countTouch(ops); touched > 0 {
		e.counts.touches.Add(touched)
	}
}

func countTouch(ops []kv.Op) (n uint64) {
	for i := range ops {
		if ops[i].Touch {
			n++
		}
	}
	return n
}

// failAll reports err for every op of a run.
func failAll(ops []kv.Op, err error) {
	for i := range ops {
		ops[i].Result = kv.Result{Status: kv.Failed, Err: fmt.Errorf("server: %s: %w", ops[i].Kind, err)}
	}
}
