package server

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The pending table holds, for every key with a write that is acknowledged
// but not yet applied to the index, where that key's item is now: the
// location of its new item (a set, an add, an incr, ...) or a tombstone (a
// delete). Gets and read-modify-write ops consult it before the index, so a
// write is acknowledged as soon as its item is linked and its index update
// is queued, and a client still reads its own writes.
//
// It is cut into stripes (by the same hash bits as the key locks), each a
// small array read lock-free under a sequence lock: a reader never writes a
// shared cache line, so hot keys under Zipf load do not serialize readers.
// Writers of a stripe (a write run holding the key's stripe lock, or a
// shard scheduler completing an update) take the stripe's short mutex.

// pendingSlots is the most keys of one stripe with writes in flight. A
// write run finding its stripe full waits for the scheduler to apply
// earlier updates (pendingStripe.put), which bounds the table at
// stripes*pendingSlots entries.
const pendingSlots = 16

// Entry words: the location in the low 32 bits, the kind above.
const (
	pendingInsert    = 0
	pendingTombstone = 1 << 32
)

// pendingEntry builds the word of an entry.
func pendingEntry(loc uint32, tombstone bool) uint64 {
	w := uint64(loc)
	if tombstone {
		w |= pendingTombstone
	}
	return w
}

// entryLoc returns an entry's location; entryDead whether it is a
// tombstone.
func entryLoc(w uint64) uint32 { return uint32(w) }
func entryDead(w uint64) bool  { return w&pendingTombstone != 0 }

// pendingStripe is one stripe of the pending table: slots [0, n) hold
// entries. Every field readers touch is atomic.
type pendingStripe struct {
	mu      sync.Mutex    // writers
	seq     atomic.Uint32 // odd while a writer changes the slots
	n       atomic.Int32  // slots in use
	applied atomic.Uint32 // entries removed by completed updates (see Engine.current)
	hash    [pendingSlots]atomic.Uint64
	word    [pendingSlots]atomic.Uint64
	_       [40]byte // keep neighbouring stripes' hot words on separate cache lines
}

// pendingTable is the pending table: one stripe per key lock, and beside
// the stripes a summary word per stripe with bit maskBit(h) set for each
// hash h it holds. Readers test the summary first: the summaries (32 KiB)
// stay in the cache, where the stripes (over a megabyte) do not, so the
// lookup of a key without a write in flight costs no memory miss unless
// another key of its stripe with the same 6 summary bits has one (a stripe
// check alone was 9% of the CPU engine's samples on pipelined 10-key
// multi-gets on the 2-core VM, and a per-stripe busy bit still let 3% of
// the H200's through, the CPU engine keeping hundreds of entries pending
// between its update rounds).
type pendingTable struct {
	summary [stripes]atomic.Uint64
	s       [stripes]pendingStripe
}

func (t *pendingTable) stripe(h uint64) *pendingStripe { return &t.s[stripeOf(h)] }

// maskBit returns the summary bit of hash h: 6 bits below the stripe's.
func maskBit(h uint64) uint64 { return 1 << (h >> 46 & 63) }

// resummarize sets stripe i's summary to the bits of its n entries. The
// caller holds the stripe's mutex (the summary's only writers).
func (t *pendingTable) resummarize(i int, p *pendingStripe, n int) {
	var m uint64
	for k := range n {
		m |= maskBit(p.hash[k].Load())
	}
	t.summary[i].Store(m)
}

// lookup returns the entry of hash h, if any. Lock-free: it retries while
// a writer changes the stripe. Cost: one atomic load of a cached summary
// word when no entry of the stripe shares h's summary bit (the common
// case), else a scan of the stripe's few entries.
func (t *pendingTable) lookup(h uint64) (uint64, bool) {
	i := stripeOf(h)
	if t.summary[i].Load()&maskBit(h) == 0 {
		return 0, false
	}
	p := &t.s[i]
	for {
		s := p.seq.Load()
		if s&1 != 0 {
			runtime.Gosched()
			continue
		}
		var w uint64
		found := false
		n := int(p.n.Load())
		for i := 0; i < n && i < pendingSlots; i++ {
			if p.hash[i].Load() == h {
				w, found = p.word[i].Load(), true
				break
			}
		}
		if p.seq.Load() == s {
			return w, found
		}
	}
}

// put sets the entry of hash h to w, replacing the key's earlier entry. It
// returns false, changing nothing, when the stripe is full and h has no
// entry. The caller holds h's key lock. Cost: the stripe mutex and a scan.
func (t *pendingTable) put(h, w uint64) bool {
	p := t.stripe(h)
	p.mu.Lock()
	defer p.mu.Unlock()
	n := int(p.n.Load())
	i := 0
	for i < n && p.hash[i].Load() != h {
		i++
	}
	if i == n && n == pendingSlots {
		return false
	}
	// The summary bit before the entry: a reader that finds the entry's
	// bit clear ran before the write was acknowledged.
	sum := &t.summary[stripeOf(h)]
	sum.Store(sum.Load() | maskBit(h))
	p.seq.Add(1)
	p.hash[i].Store(h)
	p.word[i].Store(w)
	if i == n {
		p.n.Store(int32(n + 1))
	}
	p.seq.Add(1)
	return true
}

// remove deletes the entry of hash h if it is still w (a later write of
// the key replaced it otherwise) and counts the removal in the stripe's
// applied counter. It reports whether it removed the entry. Called by the
// schedulers once the write's update is applied. Cost: the stripe mutex
// and a scan.
func (t *pendingTable) remove(h, w uint64) bool {
	p := t.stripe(h)
	p.mu.Lock()
	defer p.mu.Unlock()
	n := int(p.n.Load())
	for i := 0; i < n; i++ {
		if p.hash[i].Load() != h {
			continue
		}
		if p.word[i].Load() != w {
			return false
		}
		p.seq.Add(1)
		last := n - 1
		p.hash[i].Store(p.hash[last].Load())
		p.word[i].Store(p.word[last].Load())
		p.hash[last].Store(0)
		p.word[last].Store(0)
		p.n.Store(int32(last))
		p.applied.Add(1)
		p.seq.Add(1)
		t.resummarize(stripeOf(h), p, last) // after the entry is gone
		return true
	}
	return false
}

// appliedOf returns the applied counter of h's stripe.
func (t *pendingTable) appliedOf(h uint64) uint32 { return t.stripe(h).applied.Load() }

// size returns the number of entries (a snapshot, for stats and tests).
func (t *pendingTable) size() int {
	n := 0
	for i := range t.s {
		n += int(t.s[i].n.Load())
	}
	return n
}

// waitRoom waits until h's stripe has a free slot or an entry for h. The
// caller holds h's key lock, so no other write adds an entry for the
// stripe's keys; the schedulers free slots as they apply updates, which
// are all queued already. Cost: at most one update batch.
func (t *pendingTable) waitRoom(h uint64) {
	p := t.stripe(h)
	for p.n.Load() >= pendingSlots {
		if _, ok := t.lookup(h); ok {
			return
		}
		runtime.Gosched()
	}
}
