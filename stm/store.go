package stm

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// noVersion marks a slot of the GPU engine's version rings that holds no
// version (empty, or being overwritten). Real commit timestamps are below
// it.
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

// Store is the CPU engine: N items with up to K versions each, a version
// lock per item and a commit clock. Every method is safe for concurrent
// use.
type Store struct {
	cfg  Config
	n, k int

	// items[i] is item i's lock word and newest version; its older
	// versions are a chain of records in the version logs, newest first.
	items []item
	// logs are the version logs, one per stripe: rings of records of
	// replaced versions, written in sequence by the commits of the
	// transactions the stripe was given to (so that a commit writes the
	// old versions of its items to lines it wrote last, not to lines of
	// its own per item), and overwritten oldest first.
	logs []versionLog

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
// while the item is free, and locked while a committing transaction holds
// it; val is the newest value and prev the reference of the record of the
// version before it (0: none). Only the holder of the lock changes val and
// prev, and word changes with every commit of the item, so a reader that
// finds the same free word before and after reading val and prev read
// them as one.
type item struct {
	word, val, prev atomic.Uint64
}

// versionLog is a ring of records of 3 words each: a replaced version's
// timestamp and value, and the reference of the version before it. A
// reference is position<<16 | log number; positions start at 1 and only
// grow. A commit raises gone to the last position its records overwrite
// before it writes them, so a reader that finds gone below its position
// after reading a record read it whole.
type versionLog struct {
	next atomic.Uint64 // the last position taken
	_    [7]uint64
	gone atomic.Uint64 // records up to this position may be overwritten
	_    [7]uint64
	once sync.Once // allocates recs when the first Tx of the stripe is made
	recs []atomic.Uint64
	mask uint64 // records - 1
	_    [8]uint64
}

// stripe is a share of the store's statistics, counted by the
// transactions whose Tx it was given to, on cache lines of its own.
type stripe struct {
	commits, roCommits atomic.Uint64
	aborts             [NumCauses]atomic.Uint64
	_                  [16 - 2 - NumCauses]uint64
}

// DefaultCPUVersions is the versions per item of a CPU store whose Config
// says 0: the engine keeps replaced versions in version logs, so deep
// chains cost memory only in the logs (N*(K-1) records of 32 bytes over
// all of them).
const DefaultCPUVersions = DefaultVersions

// The records of a version log: N*(K-1) over all of them, at least
// minLogRecords (96 KiB; small stores keep recent versions for a while,
// not only K-1 installs of a log) and at most maxLogRecords (1.5 MiB: what a
// goroutine installs in tens of milliseconds). Only the logs of stripes
// that transactions were given allocate theirs.
const (
	minLogRecords = 1 << 12
	maxLogRecords = 1 << 16
)

// NewStore creates a CPU Store, the Go API of transactions (Atomically,
// ReadOnly) on goroutines. It is not an engine facade: Open returns those
// (an Engine that runs whole workloads, on a GPU or the CPU). A Store has
// no Close; the garbage collector frees it. Cost: O(N) time and memory (24
// bytes an item); the version logs, up to 1.5 MiB per four processors, are
// allocated as transactions start using them.
func NewStore(o StoreOptions) (*Store, error) {
	cfg := o.Config
	if cfg.Versions == 0 {
		cfg.Versions = DefaultCPUVersions
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(o.Items); err != nil {
		return nil, err
	}
	cfg = cfg.forItems(o.Items)
	n, k := o.Items, cfg.Versions
	stripes := stripesFor(runtime.GOMAXPROCS(0))
	per := logRecords(n, k, stripes)
	s := &Store{
		cfg: cfg, n: n, k: k,
		items:   make([]item, n),
		stripes: make([]stripe, stripes),
		record:  o.Record || o.RecordAborted, recordAborted: o.RecordAborted, yield: o.yield,
	}
	if k > 1 {
		s.logs = make([]versionLog, stripes)
	}
	if o.Init != nil {
		for i := range n {
			s.items[i].val.Store(o.Init(i))
		}
	}
	s.txPool.New = func() any {
		st := int(s.stripeSeq.Add(1)) % stripes
		tx := &Tx{s: s, stats: &s.stripes[st], logNo: uint64(st)}
		if s.logs != nil {
			lg := &s.logs[st]
			lg.once.Do(func() {
				lg.recs = make([]atomic.Uint64, 3*per)
				lg.mask = uint64(per - 1)
			})
			tx.log = lg
		}
		return tx
	}
	return s, nil
}

// logRecords returns the records of each version log of a store of n
// items keeping k versions over stripes logs (0: none, when k is 1).
func logRecords(n, k, stripes int) int {
	if k <= 1 {
		return 0
	}
	return 1 << bits.Len(uint(min(maxLogRecords, max(minLogRecords, (n*(k-1)+stripes-1)/stripes))-1))
}

// StoreBytes returns the most memory NewStore's store of items items
// shaped by c takes on this machine (at its GOMAXPROCS): 24 bytes an item
// and every version log it may allocate (3 words a record), whatever
// c.LogSize, c.LogWrites and c.Servers say (they shape the GPU engine
// only). It does not count the history (StoreOptions.Record) nor what
// Final returns (8 bytes an item). Cost: O(1).
func StoreBytes(items int, c Config) uint64 {
	k := c.Versions
	if k == 0 {
		k = DefaultCPUVersions
	}
	stripes := stripesFor(runtime.GOMAXPROCS(0))
	return uint64(items)*uint64(unsafe.Sizeof(item{})) +
		uint64(stripes)*uint64(logRecords(items, k, stripes))*3*8
}

// stripesFor returns the statistics stripes and version logs of a store
// used by procs processors: four per processor, a power of two, so that
// transactions running at once rarely share one.
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
// the largest timestamp not above snap. ok is false when the item no longer
// keeps that version (it is more than K-1 versions back, or its record was
// overwritten in its log).
//
// A commit takes its timestamp after locking its items, so once the item
// is free every commit at or before snap has written it back: a read waits
// while a commit holds the item (it holds it from its lock to the end of
// its write-back, never waiting for anything itself). Cost: three atomic
// loads for the newest version; for an older one, four more per record of
// the chain, at most K-1.
func (s *Store) readAt(i int, snap uint64) (uint64, bool) {
	it := &s.items[i]
	for spins := 0; ; spins++ {
		w := it.word.Load()
		switch {
		case w&locked != 0:
			pause(spins)
		case w <= snap:
			x := it.val.Load()
			if it.word.Load() == w {
				return x, true
			}
		default:
			p := it.prev.Load()
			if it.word.Load() == w {
				return s.readOld(p, snap)
			}
		}
	}
}

// readOld follows a chain of version records from reference p to the
// newest version not above snap, through at most K-1 records; a record
// overwritten in its log ends the chain. Cost: four atomic loads per
// record.
func (s *Store) readOld(p, snap uint64) (uint64, bool) {
	for range s.k - 1 {
		if p == 0 {
			return 0, false
		}
		lg := &s.logs[p&0xFFFF]
		pos := p >> 16
		r := lg.recs[3*(pos&lg.mask):][:3]
		ts, x, prev := r[0].Load(), r[1].Load(), r[2].Load()
		if lg.gone.Load() >= pos {
			return 0, false
		}
		if ts <= snap {
			return x, true
		}
		p = prev
	}
	return 0, false
}

// install makes (v, ts) item i's newest version and frees the item; the
// caller holds its lock, and old is the timestamp of the version it
// replaces. With more than one version per item, the replaced version goes
// to position pos of lg. Cost: 3 atomic stores to the item, 3 to the
// record.
func (s *Store) install(i int, ts, v, old uint64, lg *versionLog, logNo, pos uint64) {
	it := &s.items[i]
	var ref uint64
	if lg != nil {
		r := lg.recs[3*(pos&lg.mask):][:3]
		r[0].Store(old)
		r[1].Store(it.val.Load())
		r[2].Store(it.prev.Load())
		ref = pos<<16 | logNo
	}
	it.prev.Store(ref)
	it.val.Store(v)
	it.word.Store(ts)
}

// reserve takes n positions of log lg and returns the one before the
// first, after marking the records they overwrite as gone.
func (lg *versionLog) reserve(n uint64) uint64 {
	last := lg.next.Add(n)
	if size := lg.mask + 1; last > size {
		for g := lg.gone.Load(); g < last-size && !lg.gone.CompareAndSwap(g, last-size); g = lg.gone.Load() {
		}
	}
	return last - n
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
