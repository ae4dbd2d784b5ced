package server

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/internal/reuse"
	"github.com/warpkv/warpkv/itemstore"
	"github.com/warpkv/warpkv/kv"
)

// scratch is the reusable memory of one Do call.
type scratch struct {
	hashes  []uint64 // per op of the group
	locs    []uint32 // per op: index search result
	order   []int    // op indices grouped by shard
	bounds  []int    // per shard: end of its run in order
	sh      []uint64 // hashes in shard order
	sl      []uint32 // search results in shard order
	tickets []ticket
	held    []ticket        // searches whose items are still being acquired (release)
	refs    []itemstore.Ref // doReads: per op, the pending item acquired
	from    []uint8         // doReads: per op, where its item comes from (fromIndex, ...)
	wake    chan struct{}   // this Do's search results are ready: a token per ticket (room for one per shard)
	ureqs   []updateList    // per shard: the write run's updates
	cur     []itemstore.Ref // per op: the present item, held
	curPend []bool          // per op: cur is a pending insert's item
	qh      []uint64        // hashes to search
	qi      []int           // the op of each
	ql      []uint32        // their locations
	// current: per op, whether searched, the applied counter before, and
	// the location found
	searched []bool
	applied  []uint32
	slocs    []uint32
	victims  []itemstore.Victim
	digits   []byte
	locks    []int
	written  hashSet  // hoistReads: the hashes of the keys written so far
	hoisted  []bool   // hoistReads: the ops it runs first
	nhoisted int      // hoistReads: how many (they begin perm)
	perm     []int    // hoistReads: the order of the ops
	opHash   []uint64 // hoistReads: the key hash of every op of the batch
	tmpHash  []uint64 // the hashes of tmpOps
	tmpOps   []kv.Op  // the ops in that order
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
	if e.inlineUpd {
		defer e.applyOverdue() // under closeMu: the shards stay open
	}
	perm := e.hoistReads(b.Ops, sc)
	if perm == nil {
		e.runOps(b, b.Ops, nil, sc)
		return nil
	}
	// The hoisted Gets run in place, the other ops from a copy in their
	// order (few: the writes and the Gets of keys written before them).
	hoisted, rest := perm[:sc.nhoisted], perm[sc.nhoisted:]
	if len(hoisted) > 0 {
		for _, i := range hoisted {
			b.Ops[i].Result = kv.Result{}
		}
		start := time.Now()
		e.doReads(b, b.Ops, hoisted, sc.opHash, sc)
		e.getLat.add(time.Since(start))
	}
	if len(rest) == 0 {
		return nil
	}
	tmp := sc.tmpOps[:0]
	th := sc.tmpHash[:0]
	for _, i := range rest {
		tmp = append(tmp, b.Ops[i])
		th = append(th, sc.opHash[i])
	}
	sc.tmpHash = th
	e.runOps(b, tmp, th, sc)
	for k, i := range rest {
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
// one per run. The hashes of the keys written so far are kept in a small
// open-addressing set (hashSet). Cost: a hash and a set probe per op,
// linear in the batch (a scan of the written keys per Get was a third of
// the CPU engine's time on pipelined 10-key multi-gets). With an order, it
// leaves every op's key hash in sc.opHash, so that no key is hashed twice.
func (e *Engine) hoistReads(ops []kv.Op, sc *scratch) []int {
	writes := 0
	late := false // a Get follows a write
	for i := range ops {
		switch ops[i].Kind {
		case kv.Flush:
			return nil
		case kv.Get:
			late = late || writes > 0
		default:
			writes++
		}
	}
	if !late {
		return nil
	}
	written := sc.written.reset(writes)
	perm := sc.perm[:0]
	reuse.Resize(&sc.hoisted, len(ops))
	clear(sc.hoisted)
	reuse.Resize(&sc.opHash, len(ops))
	for i := range ops {
		h := hashindex.Hash(ops[i].Key)
		sc.opHash[i] = h
		if ops[i].Kind != kv.Get {
			written.add(h)
		} else if !written.has(h) {
			perm = append(perm, i)
			sc.hoisted[i] = true
		}
	}
	sc.nhoisted = len(perm)
	for i := range ops {
		if !sc.hoisted[i] {
			perm = append(perm, i)
		}
	}
	sc.perm = perm
	return perm
}

// hashSet is a set of key hashes by open addressing with linear probing,
// at most half full. Hash 0 is stored as 1 (the slot value of an empty
// slot is 0): a Get whose key hashes to 1 may so stay in batch order
// needlessly, never the reverse.
type hashSet struct{ slots []uint64 }

// reset empties the set and sizes it for n hashes.
func (s *hashSet) reset(n int) *hashSet {
	size := 1 << bits.Len(uint(max(2*n, 16)-1))
	reuse.Resize(&s.slots, size)
	clear(s.slots)
	return s
}

func (s *hashSet) add(h uint64) {
	h = max(h, 1)
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for s.slots[i] != 0 && s.slots[i] != h {
		i = (i + 1) & mask
	}
	s.slots[i] = h
}

func (s *hashSet) has(h uint64) bool {
	h = max(h, 1)
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; s.slots[i] != 0; i = (i + 1) & mask {
		if s.slots[i] == h {
			return true
		}
	}
	return false
}

// runOps executes ops in order, in runs: consecutive Gets, then
// consecutive writes to distinct keys, and flushes alone. hashes holds the
// ops' key hashes, or is nil (the runs hash the keys).
func (e *Engine) runOps(b *kv.Batch, ops []kv.Op, hashes []uint64, sc *scratch) {
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
			e.doReads(b, ops[i:j], nil, part(hashes, i, j), sc)
			e.getLat.add(time.Since(start))
			i = j
		default:
			j := e.writeRun(ops, hashes, i, sc)
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
// key hashes in sc.hashes (taken from hashes unless it is nil).
func (e *Engine) writeRun(ops []kv.Op, hashes []uint64, i int, sc *scratch) int {
	sc.hashes = sc.hashes[:0]
	j := i
	for ; j < len(ops) && ops[j].Kind != kv.Get && ops[j].Kind != kv.Flush; j++ {
		h := keyHash(ops, hashes, j)
		if slices.Contains(sc.hashes, h) {
			break
		}
		ops[j].Result = kv.Result{}
		sc.hashes = append(sc.hashes, h)
	}
	return j
}

// part returns hashes[i:j], or nil when hashes is nil.
func part(hashes []uint64, i, j int) []uint64 {
	if hashes == nil {
		return nil
	}
	return hashes[i:j]
}

// keyHash returns the key hash of ops[i]: hashes[i], or the hash of its key
// when hashes is nil.
func keyHash(ops []kv.Op, hashes []uint64, i int) uint64 {
	if hashes != nil {
		return hashes[i]
	}
	return hashindex.Hash(ops[i].Key)
}

// doFlush records a flush_all. Items are invalidated lazily: readers check
// the flush state, and eviction reclaims their memory. A flush that takes
// effect now spends a CAS unique, as memcached's (kv.FlushSpendsCAS), so
// the CAS values clients see after it are memcached's.
func (e *Engine) doFlush(op *kv.Op) {
	now := e.clock()
	e.flushMu.Lock()
	next := e.cas.Load() + 1
	if kv.FlushSpendsCAS(op.Exptime, now) {
		next = e.cas.Add(1) // spent by the flush: every item so far has a smaller CAS
	}
	e.flush.Flush(op.Exptime, now, next)
	e.flushMu.Unlock()
	e.counts.flushes.Add(1)
	op.Result.Status = kv.Flushed
}

// search looks up hashes in their shards and writes the locations to out;
// the caller must call release once it has acquired the items there (and
// before it searches again). With several shards it posts every shard's
// part before it waits for any. Cost: one wait for the slowest shard's
// next search batch; with inline searches (the CPU engine, inline.go), the
// index search itself on the caller's goroutine.
func (e *Engine) search(sc *scratch, hashes []uint64, out []uint32) error {
	n := len(hashes)
	if sc.wake == nil {
		sc.wake = make(chan struct{}, len(e.shards))
	}
	if len(e.shards) == 1 {
		return e.shards[0].search(hashes, out, sc.wake, &sc.held)
	}
	e.groupByShard(sc, hashes)
	reuse.Resize(&sc.sl, n)
	if e.shards[0].inline != nil {
		// Inline searches (all shards alike): each shard's part in turn,
		// held until release.
		lo := 0
		for s, hi := range sc.bounds {
			if hi > lo {
				if err := e.shards[s].search(sc.sh[lo:hi], sc.sl[lo:hi], nil, &sc.held); err != nil {
					return err
				}
			}
			lo = hi
		}
		for k, i := range sc.order {
			out[i] = sc.sl[k]
		}
		return nil
	}
	sc.tickets = sc.tickets[:0]
	var err error
	lo := 0
	for s, hi := range sc.bounds {
		if hi-lo > e.shards[s].maxPost() {
			// A part too large to post at once: the shards one after
			// another.
			return e.searchEach(sc, hashes, out)
		}
		lo = hi
	}
	lo = 0
	for s, hi := range sc.bounds {
		if hi > lo {
			var t ticket
			if t, err = e.shards[s].post(sc.sh[lo:hi], sc.wake); err != nil {
				break
			}
			t.at = lo
			sc.tickets = append(sc.tickets, t)
		}
		lo = hi
	}
	await(sc.wake, sc.tickets) // one token per ticket
	for _, t := range sc.tickets {
		if cerr := t.collect(sc.sl[t.at:]); cerr != nil && err == nil {
			err = cerr
		}
	}
	sc.held = append(sc.held, sc.tickets...)
	if err != nil {
		return err
	}
	for k, i := range sc.order {
		out[i] = sc.sl[k]
	}
	return nil
}

// release ends the searches whose items the caller has acquired.
func (e *Engine) release(sc *scratch) {
	for _, t := range sc.held {
		t.done()
	}
	clear(sc.held)
	sc.held = sc.held[:0]
}

// searchEach is search for parts too large to post at once: each shard's
// part is searched in turn (sc grouped by groupByShard).
func (e *Engine) searchEach(sc *scratch, hashes []uint64, out []uint32) error {
	lo := 0
	for s, hi := range sc.bounds {
		if err := e.shards[s].search(sc.sh[lo:hi], sc.sl[lo:hi], sc.wake, nil); err != nil {
			return err
		}
		lo = hi
	}
	for k, i := range sc.order {
		out[i] = sc.sl[k]
	}
	return nil
}

// groupByShard orders hashes by shard (sc.order, sc.sh, sc.bounds).
func (e *Engine) groupByShard(sc *scratch, hashes []uint64) {
	ns := len(e.shards)
	n := len(hashes)
	reuse.Resize(&sc.bounds, ns)
	clear(sc.bounds)
	for _, h := range hashes {
		sc.bounds[e.shardOf(h)]++
	}
	sum := 0
	for s := range sc.bounds {
		sum, sc.bounds[s] = sum+sc.bounds[s], sum // start offsets for now
	}
	reuse.Resize(&sc.order, n)
	reuse.Resize(&sc.sh, n)
	for i, h := range hashes {
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

// stillLive reports whether a held item has not expired or been flushed
// since it was looked up (counting it if it has).
func (e *Engine) stillLive(r itemstore.Ref, now int64, fs *kv.FlushState) bool {
	if !kv.Alive(r.Exptime(), now) {
		e.counts.expired.Add(1)
		return false
	}
	if !fs.Valid(r.CAS(), r.LastAccess(), now) {
		e.counts.flushed.Add(1)
		return false
	}
	return true
}

// item returns the kv view of a held item.
func item(r itemstore.Ref) kv.Item {
	return kv.Item{Value: r.Value(), Flags: r.Flags(), Exptime: r.Exptime(), CAS: r.CAS(), Meta: r.Meta(), Class: r.Class()}
}

// doReads executes a run of Gets: the pending table first (writes
// acknowledged but not yet in the index), one search for the rest, then
// each hit's value is copied into the batch. The pending table is read
// before the search is queued: a write acknowledged before this run either
// is still pending then, or was applied to the index before the search.
// With idx, the run is the ops at those indices of ops (in that order),
// else all of ops. hashes holds the key hashes of ops, or is nil.
func (e *Engine) doReads(b *kv.Batch, ops []kv.Op, idx []int, hashes []uint64, sc *scratch) {
	t := e.prof.start()
	n := len(ops)
	if idx != nil {
		n = len(idx)
	}
	now := e.clock()
	fs := e.flushState()
	reuse.Resize(&sc.hashes, n)
	reuse.Resize(&sc.locs, n)
	reuse.Resize(&sc.refs, n)
	reuse.Resize(&sc.from, n)
	sc.qh = sc.qh[:0]
	sc.qi = sc.qi[:0]
	for i := range n {
		h := keyHash(ops, hashes, at(idx, i))
		sc.hashes[i] = h
		sc.refs[i], sc.from[i] = itemstore.Ref{}, fromIndex
		if w, ok := e.pend.lookup(h); ok {
			// Acquired now: a later write of the key may unlink it.
			sc.from[i] = fromPending
			if !entryDead(w) {
				var ok, stale bool
				sc.refs[i], ok, stale = e.lookupStale(entryLoc(w), h, ops[at(idx, i)].Key, now, &fs)
				if stale {
					sc.from[i] = fromPendingStale
				} else if ok {
					sc.from[i] = fromPendingHit
				}
			}
			continue
		}
		sc.qh = append(sc.qh, h)
		sc.qi = append(sc.qi, i)
	}
	e.prof.lap(stHash, &t)
	if len(sc.qh) > 0 {
		reuse.Resize(&sc.ql, len(sc.qh))
		if err := e.search(sc, sc.qh, sc.ql); err != nil {
			e.release(sc)
			e.releaseRefs(sc, n)
			failAll(ops, idx, err)
			return
		}
		for k, i := range sc.qi {
			sc.locs[i] = sc.ql[k]
		}
		// The items' first cache lines, all misses at once, before the
		// acquires below pay them one by one.
		e.store.Warm(sc.ql)
		e.prof.lap(stSearchWait, &t)
	}
	// Acquire every searched item before the search is released: a
	// location dropped meanwhile is unlinked only after that.
	for i := range n {
		if sc.from[i] != fromIndex {
			continue
		}
		var ok, stale bool
		sc.refs[i], ok, stale = e.lookupStale(sc.locs[i], sc.hashes[i], ops[at(idx, i)].Key, now, &fs)
		switch {
		case stale:
			sc.from[i] = fromPendingStale
		case ok:
			sc.from[i] = fromPendingHit
		default:
			sc.from[i] = fromPending
		}
	}
	e.release(sc)
	var hits uint64
	for i := range n {
		op := &ops[at(idx, i)]
		r, ok := sc.refs[i], sc.from[i] == fromPendingHit
		sc.refs[i] = itemstore.Ref{}
		if ok && !e.stillLive(r, now, &fs) {
			// An earlier op of the batch expired it (gat with a past
			// expiry on the same key).
			r.Release()
			ok = false
		}
		if sc.from[i] == fromPendingStale {
			// A write replaced or removed the item since it was located
			// (or, rarely, it was evicted): locate the key again.
			r, ok = e.relocate(sc.hashes[i], op.Key, now, &fs)
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
	e.prof.lap(stItems, &t)
	e.counts.gets.Add(uint64(n))
	e.counts.getHits.Add(hits)
	if touched := countTouch(ops, idx); touched > 0 {
		e.counts.touches.Add(touched)
	}
}

// Where doReads finds an op's item.
const (
	fromIndex        = iota // the search result in sc.locs
	fromPending             // no live item (a tombstone, absent, expired, flushed)
	fromPendingHit          // the live item, held in sc.refs
	fromPendingStale        // the item located was already gone: relocate
)

// releaseRefs releases the items doReads acquired from the pending table.
func (e *Engine) releaseRefs(sc *scratch, n int) {
	for i := range n {
		if sc.refs[i].Valid() {
			sc.refs[i].Release()
			sc.refs[i] = itemstore.Ref{}
		}
	}
}

// relocateTries is how often relocate looks a key up without its lock
// before it takes it.
const relocateTries = 2

// relocate finds the live item of a key whose located item went stale and
// returns it, held. It looks at the pending table, then searches, a few
// times; then it takes the key's lock, where no write of the key is half
// done and, with no pending entry, none is in flight, so the search is
// final (a stale result then means the item was evicted). Cost: a search
// batch per try.
func (e *Engine) relocate(h uint64, key []byte, now int64, fs *kv.FlushState) (itemstore.Ref, bool) {
	e.counts.staleReads.Add(1)
	for try := 0; ; try++ {
		locked := try >= relocateTries
		if locked {
			l := &e.locks[stripeOf(h)]
			l.Lock()
			defer l.Unlock()
		}
		var loc uint32
		if w, ok := e.pend.lookup(h); ok {
			if entryDead(w) {
				return itemstore.Ref{}, false
			}
			loc = entryLoc(w)
		} else {
			var err error
			if loc, err = e.searchOne(h); err != nil {
				return itemstore.Ref{}, false
			}
		}
		r, ok, stale := e.lookupStale(loc, h, key, now, fs)
		if !stale || locked {
			return r, ok
		}
	}
}

// countTouch counts the touching Gets of a run: the ops of ops at the
// indices idx, or all of them when idx is nil.
func countTouch(ops []kv.Op, idx []int) (n uint64) {
	for i := range runLen(ops, idx) {
		if ops[at(idx, i)].Touch {
			n++
		}
	}
	return n
}

// failAll reports err for every op of a run (ops at idx, or all of ops).
func failAll(ops []kv.Op, idx []int, err error) {
	for i := range runLen(ops, idx) {
		op := &ops[at(idx, i)]
		op.Result = kv.Result{Status: kv.Failed, Err: fmt.Errorf("server: %s: %w", op.Kind, err)}
	}
}

// at returns the index in ops of a run's i-th op: idx[i], or i when the
// run is all of ops (idx nil).
func at(idx []int, i int) int {
	if idx == nil {
		return i
	}
	return idx[i]
}

// runLen returns the length of the run of ops at idx (all of ops when idx
// is nil).
func runLen(ops []kv.Op, idx []int) int {
	if idx == nil {
		return len(ops)
	}
	return len(idx)
}
