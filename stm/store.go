package stm

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// noVersion marks a ring slot that holds no version (empty, or being
// overwritten). Real commit timestamps are below it.
const noVersion = ^uint64(0)

// pubRing is the number of commit timestamps that may be assigned but not
// yet visible at once; a server waits before assigning more.
const pubRing = 1 << 16

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

// Store is the CPU engine: N items with K versions each, a commit clock, and
// one commit server per partition. Every method is safe for concurrent use.
type Store struct {
	cfg      Config
	n, k     int
	partSize int

	// Item i's ring is slots [i*k, (i+1)*k); slot j is the pair of words
	// ring[2j] (its version) and ring[2j+1] (its value), so that a read
	// touches one cache line; head[i] is the slot of its newest version. A
	// slot is written by one transaction at a time (the commit protocol
	// excludes concurrent writers of an item); readers validate what they
	// read (see readAt).
	ring []atomic.Uint64
	head []atomic.Uint32
	// newest mirrors each item's newest version as the pair newest[2i]
	// (version), newest[2i+1] (value), four items a cache line: most
	// reads are of the newest version and need only this.
	newest []atomic.Uint64

	clock atomic.Uint64 // newest commit timestamp whose writes are all visible
	_     [7]uint64
	next  atomic.Uint64 // newest commit timestamp assigned
	_     [7]uint64
	pub   []atomic.Uint64 // pub[t%pubRing] == t once t's writes are back

	parts []*partition

	counters counters
	txPool   sync.Pool

	record, recordAborted bool
	yield                 bool
	histMu                sync.Mutex
	history               []Record
}

// counters are the store's statistics, one cache line each.
type counters struct {
	commits, roCommits paddedCounter
	aborts             [NumCauses]paddedCounter
}

type paddedCounter struct {
	atomic.Uint64
	_ [7]uint64
}

// NewStore creates a CPU Store, the Go API of transactions (Atomically,
// ReadOnly) on goroutines. It is not an engine facade: Open returns those
// (an Engine that runs whole workloads, on a GPU or the CPU). A Store has
// no Close; the garbage collector frees it. Cost: O(N*K) memory and time.
func NewStore(o StoreOptions) (*Store, error) {
	cfg := o.Config.withDefaults()
	if err := cfg.validate(o.Items); err != nil {
		return nil, err
	}
	cfg = cfg.forItems(o.Items)
	n, k := o.Items, cfg.Versions
	s := &Store{
		cfg: cfg, n: n, k: k, partSize: cfg.partSize(n),
		ring: make([]atomic.Uint64, 2*n*k), head: make([]atomic.Uint32, n), newest: make([]atomic.Uint64, 2*n),
		pub:    make([]atomic.Uint64, pubRing),
		record: o.Record || o.RecordAborted, recordAborted: o.RecordAborted, yield: o.yield,
	}
	for i := range n {
		var v uint64
		if o.Init != nil {
			v = o.Init(i)
		}
		s.ring[2*i*k+1].Store(v)
		s.newest[2*i+1].Store(v)
		for j := 1; j < k; j++ {
			s.ring[2*(i*k+j)].Store(noVersion)
		}
	}
	s.parts = make([]*partition, cfg.Servers)
	for p := range s.parts {
		s.parts[p] = newPartition(cfg.LogSize, cfg.LogWrites)
	}
	s.txPool.New = func() any { return &Tx{s: s} }
	return s, nil
}

// Items returns N.
func (s *Store) Items() int { return s.n }

// Config returns the store's configuration with defaults filled in and
// Servers lowered to the partitions that hold items.
func (s *Store) Config() Config { return s.cfg }

// Clock returns the timestamp of the newest visible commit (0 before any).
func (s *Store) Clock() uint64 { return s.clock.Load() }

// partition returns the partition (server) of item i.
func (s *Store) partition(i uint32) int { return int(i) / s.partSize }

// readAt returns the value item i had at snapshot snap: the version with
// the largest timestamp not above snap. ok is false when the ring no longer
// holds that version. Lock-free: a slot is read as (version, value,
// version) and the chosen slot is checked again at the end; versions of an
// item only grow and are evicted oldest first, so a chosen version that is
// still present at the end had no newer version <= snap missed by the scan.
// Cost: O(K) atomic loads.
func (s *Store) readAt(i int, snap uint64) (uint64, bool) {
	// Fast paths: the newest version, mirrored, then the newest slot. Both
	// were written before the clock reached any version <= snap, so if
	// their version is <= snap it is the newest such version.
	if v1 := s.newest[2*i].Load(); v1 <= snap {
		x := s.newest[2*i+1].Load()
		if s.newest[2*i].Load() == v1 {
			return x, true
		}
	}
	base := i * s.k
	h := base + int(s.head[i].Load())
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

// install writes version (v, ts) of item i over its oldest slot. Only the
// transaction committing ts writes item i now. Cost: 7 atomic stores.
func (s *Store) install(i int, ts, v uint64) {
	h := s.head[i].Load()
	j := int(h) + 1
	if j == s.k {
		j = 0
	}
	slot := i*s.k + j
	s.ring[2*slot].Store(noVersion)
	s.ring[2*slot+1].Store(v)
	s.ring[2*slot].Store(ts)
	s.head[i].Store(uint32(j))
	s.newest[2*i].Store(noVersion)
	s.newest[2*i+1].Store(v)
	s.newest[2*i].Store(ts)
}

// latest returns item i's newest version (value, timestamp). Cost: O(1).
func (s *Store) latest(i int) (uint64, uint64) {
	for {
		j := int(s.head[i].Load())
		slot := i*s.k + j
		v1 := s.ring[2*slot].Load()
		x := s.ring[2*slot+1].Load()
		if s.ring[2*slot].Load() == v1 && v1 != noVersion && int(s.head[i].Load()) == j {
			return x, v1
		}
		runtime.Gosched()
	}
}

// Load returns item i's value in the newest visible state, outside any
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

// Final returns every item's newest version, which is the state after all
// commits once no transaction is running. Cost: O(N).
func (s *Store) Final() []uint64 {
	out := make([]uint64, s.n)
	for i := range out {
		out[i], _ = s.latest(i)
	}
	return out
}

// Stats returns the counts of commits and aborts so far.
func (s *Store) Stats() Stats {
	st := Stats{Commits: s.counters.commits.Load(), ReadOnlyCommits: s.counters.roCommits.Load()}
	for c := range st.Aborts {
		st.Aborts[c] = s.counters.aborts[c].Load()
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
