package stm

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// noVersion marks a ring slot that holds no version (empty, or being
// overwritten). Real commit timestamps are below it.
const noVersion = ^uint64(0)

// locked is the bit of an item's word that says a committing transaction
// holds the item; the rest of the word is then the committer's timestamp,
// 0 until it has taken one.
const locked = uint64(1) << 63

// StoreOptions configure a CPU store.
type StoreOptions struct {
	Config
	// Items is N, the number of 64-bit items (numbered 0 to N-1).
	Items int
	// Init gives item i's initial value (its version 0); nil means 0.
	Init func(i int) uint64
	// Record keeps the history of committed transactions (History):
	// memory grows with every commit, so only for tests and small runs.
	Record bool
	// RecordAborted also keeps the reads of aborted attempts (for opacity
	// checks). Implies Record.
	RecordAborted bool

	yield bool // tests: yield the processor on every read, to interleave transactions
}

// Store is the CPU engine: N items with K versions each, a version lock per
// item and a commit clock. Every method is safe for concurrent use.
type Store struct {
	cfg  Config
	n, k int

	// items[i] is item i's lock word, newest version and ring head; its
	// ring is slots [i*k, (i+1)*k) of ring, slot j the pair of words
	// ring[2j] (its version) and ring[2j+1] (its value). The newest
	// version is in the ring too: items[i] mirrors it so that most reads
	// touch one cache line.
	items []item
	ring  []atomic.Uint64

	_     [8]uint64
	clock atomic.Uint64 // the newest commit timestamp taken
	_     [7]uint64

	stripes   []stripe // statistics, one stripe per few transactions' Tx
	stripeSeq atomic.Uint32
	txPool    sync.Pool

	record, recordAborted bool
	yield                 bool
	histMu                sync.Mutex
	history               []Record
}

// item is one item's head: word is the timestamp of its newest version
// when the item is free, or locked | the committer's timestamp while a
// committing transaction holds it; val the newest value; head its newest
// version's ring slot. Only the holder of the lock changes val and head.
type item struct {
	word atomic.Uint64
	val  atomic.Uint64
	head atomic.Uint32
	_    [12]byte // two items a cache line
}

// stripe is a share of the store's statistics, counted by the
// transactions whose Tx it was given to, on cache lines of its own.
type stripe struct {
	commits, roCommits atomic.Uint64
	aborts             [NumCauses]atomic.Uint64
	_                  [16 - 2 - NumCauses]uint64
}

// New creates a CPU store. Cost: O(N*K) memory and time.
func New(o StoreOptions) (*Store, error) {
	cfg := o.Config.withDefaults()
	if err := cfg.validate(o.Items); err != nil {
		return nil, err
	}
	cfg = cfg.forItems(o.Items)
	n, k := o.Items, cfg.Versions
	s := &Store{
		cfg: cfg, n: n, k: k,
		items: make([]item, n), ring: make([]atomic.Uint64, 2*n*k),
		stripes: make([]stripe, stripesFor(runtime.GOMAXPROCS(0))),
		record:  o.Record || o.RecordAborted, recordAborted: o.RecordAborted, yield: o.yield,
	}
	for i := range n {
		var v uint64
		if o.Init != nil {
			v = o.Init(i)
		}
		s.ring[2*i*k+1].Store(v)
		s.items[i].val.Store(v)
		for j := 1; j < k; j++ {
			s.ring[2*(i*k+j)].Store(noVersion)
		}
	}
	s.txPool.New = func() any {
		return &Tx{s: s, stats: &s.stripes[int(s.stripeSeq.Add(1))%len(s.stripes)]}
	}
	return s, nil
}

// stripesFor returns the statistics stripes of a store used by procs
// processors: four per processor, a power of two, so that transactions
// running at once rarely share one.
func stripesFor(procs int) int {
	return 1 << bits.Len(uint(4*max(procs, 1)-1))
}

// Items returns N.
func (s *Store) Items() int { return s.n }

// Config returns the store's configuration with defaults filled in and
// Servers lowered to the partitions that hold items (the CPU engine
// commits through per-item locks: Servers, LogSize and LogWrites shape
// only the GPU engine).
func (s *Store) Config() Config { return s.cfg }

// Clock returns the newest commit timestamp taken (0 before any commit).
// A snapshot at Clock reads every commit with a timestamp up to it (a read
// waits for one still writing the item back).
func (s *Store) Clock() uint64 { return s.clock.Load() }

// readAt returns the value item i had at snapshot snap: the version with
// the largest timestamp not above snap. ok is false when the ring no longer
// holds that version.
//
// A commit takes its timestamp after locking its items, so when the word
// shows the item free, or locked by a commit whose timestamp is above
// snap, every commit at or before snap has written it back; a commit at or
// before snap (or one without a timestamp yet) still holding it is waited
// for. Cost: three atomic loads for the newest version, O(K) for an older
// one.
func (s *Store) readAt(i int, snap uint64) (uint64, bool) {
	it := &s.items[i]
	for spins := 0; ; spins++ {
		w := it.word.Load()
		if w&locked != 0 {
			if t := w &^ locked; t == 0 || t <= snap {
				pause(spins)
				continue
			}
		} else if w <= snap {
			x := it.val.Load()
			if it.word.Load() == w {
				return x, true
			}
			continue
		}
		return s.readRing(i, snap)
	}
}

// readRing returns item i's newest version not above snap from its ring,
// once every version up to snap is in it. Lock-free: a slot is read as
// (version, value, version) and the chosen slot is checked again at the
// end; versions of an item only grow and are evicted oldest first, so a
// chosen version that is still present at the end had no newer version <=
// snap missed by the scan. Cost: O(K) atomic loads.
func (s *Store) readRing(i int, snap uint64) (uint64, bool) {
	base := i * s.k
	// The newest slot: it was the newest version when head was read, so if
	// it is not above snap it is the newest version <= snap.
	h := base + int(s.items[i].head.Load())
	if v1 := s.ring[2*h].Load(); v1 <= snap {
		x := s.ring[2*h+1].Load()
		if s.ring[2*h].Load() == v1 {
			return x, true
		}
	}
	for attempt := 0; attempt < 4; attempt++ {
		best, bestVer, bestVal := -1, uint64(0), uint64(0)
		for j := 0; j < s.k; j++ {
			v1 := s.ring[2*(base+j)].Load()
			if v1 > snap || (best >= 0 && v1 <= bestVer) { // noVersion > any snap
				continue
			}
			x := s.ring[2*(base+j)+1].Load()
			if s.ring[2*(base+j)].Load() != v1 {
				continue // being overwritten: that version is leaving the ring
			}
			best, bestVer, bestVal = j, v1, x
		}
		if best < 0 {
			return 0, false
		}
		if s.ring[2*(base+best)].Load() == bestVer {
			return bestVal, true
		}
	}
	return 0, false
}

// install writes version (v, ts) of item i over its oldest slot and frees
// the item: the caller holds its lock. Cost: 7 atomic stores.
func (s *Store) install(i int, ts, v uint64) {
	it := &s.items[i]
	j := int(it.head.Load()) + 1
	if j == s.k {
		j = 0
	}
	slot := i*s.k + j
	s.ring[2*slot].Store(noVersion)
	s.ring[2*slot+1].Store(v)
	s.ring[2*slot].Store(ts)
	it.head.Store(uint32(j))
	it.val.Store(v)
	it.word.Store(ts)
}

// Load returns item i's value in the newest state, outside any
// transaction. Cost: one snapshot read.
func (s *Store) Load(i int) uint64 {
	s.checkItem(i)
	for {
		if v, ok := s.readAt(i, s.clock.Load()); ok {
			return v
		}
	}
}

// Snapshot returns every item's value in one consistent state (a read-only
// transaction over the whole store) and its timestamp. Cost: O(N*K).
func (s *Store) Snapshot() ([]uint64, uint64) {
	out := make([]uint64, s.n)
	var ts uint64
	err := s.ReadOnly(func(tx *Tx) error {
		ts = tx.snap
		for i := range out {
			out[i] = tx.Read(i)
		}
		return nil
	})
	if err != nil {
		panic(err) // the closure returns no error
	}
	return out, ts
}

// Final returns every item's newest value, which is the state after all
// commits once no transaction is running. Cost: O(N).
func (s *Store) Final() []uint64 {
	out := make([]uint64, s.n)
	for i := range out {
		out[i] = s.items[i].val.Load()
	}
	return out
}

// Stats returns the counts of commits and aborts so far. Cost: O(stripes),
// four per processor.
func (s *Store) Stats() Stats {
	var st Stats
	for i := range s.stripes {
		p := &s.stripes[i]
		st.Commits += p.commits.Load()
		st.ReadOnlyCommits += p.roCommits.Load()
		for c := range st.Aborts {
			st.Aborts[c] += p.aborts[c].Load()
		}
	}
	return st
}

// History returns the recorded transactions (StoreOptions.Record) in the
// order they were recorded, committed and, with RecordAborted, aborted.
func (s *Store) History() []Record {
	s.histMu.Lock()
	defer s.histMu.Unlock()
	return append([]Record(nil), s.history...)
}

func (s *Store) addRecord(r Record) {
	s.histMu.Lock()
	s.history = append(s.history, r)
	s.histMu.Unlock()
}

func (s *Store) checkItem(i int) {
	if i < 0 || i >= s.n {
		panic(fmt.Sprintf("stm: item %d outside the store of %d items", i, s.n))
	}
}

// pause backs off a spinning goroutine: busy first, then yielding.
func pause(spins int) {
	if spins > 16 {
		runtime.Gosched()
	}
}
