package server

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/itemstore"
	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/protocol"
)

// GPU search modes (Options.GPUSearch).
const (
	GPUSearchPersistent = "persistent"
	GPUSearchStaged     = "staged"
)

// Batch policies (Options.Policy).
const (
	PolicyLoad  = "load"
	PolicyFixed = "fixed"
)

// Defaults of Options.
const (
	DefaultMemoryLimit = 64 << 20              // memcached's -m 64
	DefaultGPUInterval = 20 * time.Microsecond // batch interval C on a GPU (measured best of 100, 40, 20 µs; see BENCHMARKS.md)
	DefaultMaxBatch    = 1 << 16               // jobs that make a batch go early
	// minBuckets bounds the index size from below (a 256 KiB table).
	minBuckets = 1 << 12
	// stripes is the number of key locks that serialize writes.
	stripes = 1 << 12
)

var errClosed = errors.New("server: engine closed")

// Options configure an Engine.
type Options struct {
	// MemoryLimit caps the item memory in bytes (memcached -m); 0 means
	// DefaultMemoryLimit.
	MemoryLimit int64
	// ItemSizeMax is the largest value in bytes (memcached -I); 0 means
	// kv.DefaultItemSizeMax.
	ItemSizeMax int
	// GrowthFactor and ChunkMin shape the slab classes (memcached -f, -n);
	// 0 means memcached's defaults, 1.25 and 48.
	GrowthFactor float64
	ChunkMin     int
	// Slabs configures moving slab pages between classes (memcached's
	// slab_reassign, slab_automove); the zero value is memcached's default.
	Slabs itemstore.SlabPolicy
	// Device selects the index engine: "auto" and "gpu" shard the index
	// over every usable GPU ("auto" falls back to the CPU), "gpu:N" uses GPU
	// N alone, "cpu" the CPU engine; "" means $WARPKV_DEVICE, else auto.
	Device string
	// Interval is the batch interval C. Under the fixed policy searches
	// launch at most every C and updates every 2C; under the load policy
	// C bounds how long a search waits for its batch to launch (see
	// policy.go). 0 means DefaultGPUInterval on GPUs and no wait on the
	// CPU engine (a batch launches as soon as the previous one is done).
	// Negative means 0.
	Interval time.Duration
	// CPUShards splits the CPU engine's index into that many shards, each
	// with its own scheduler, as the GPU engine does over several GPUs
	// (0 or 1: one shard). It exists to exercise the sharded paths
	// without GPUs.
	CPUShards int
	// Profile counts the time spent in each stage of serving requests
	// ("stats profile"; see profile.go). It costs a few clock reads and
	// atomic adds per batch.
	Profile bool
	// GPUSearch is how a GPU shard runs its search batches: "persistent"
	// (the default: a resident kernel polling mapped memory serves batches
	// of up to hashindex.MaxResident jobs with no launch or copy, larger
	// ones are launched straight from the mapped batch buffers) or
	// "staged" (every batch is a staged index call: copies in and out
	// through pinned memory, kernels launched per batch).
	GPUSearch string
	// CPUSearch is how the CPU engine's searches run: "inline" (the
	// default: each Do searches the index on its own goroutine, concurrent
	// with other searches and excluded only from update calls; see
	// inline.go) or "batched" (posted to the shard's search batches and
	// run by its scheduler goroutine, as on a GPU). The GPU engine ignores
	// it.
	CPUSearch string
	// SearchLaunch is who launches the search batches of shards that
	// batch (GPU shards, and the CPU engine with CPUSearch "batched"): one
	// of SearchLaunchModes, "" meaning the first, "callers" (see
	// callers.go).
	SearchLaunch string
	// InlineUpdates is on which shards a caller of Do that finds the
	// queued index updates overdue applies them itself, as the shard's
	// scheduler goroutine would, when no one else is doing the
	// scheduler's work (overdue.go): "cpu" (the default: the CPU engine's
	// shards, whose scheduler event loops under pipelined load keep from
	// running), "all" (GPU shards too) or "off" (the schedulers alone).
	InlineUpdates string
	// Policy is the batch policy: "load" (the default: the interval
	// follows the load) or "fixed" (Mega-KV's periodic launches).
	Policy string
	// MaxBatch is the queue length at which a batch launches before its
	// interval is over; 0 means DefaultMaxBatch.
	MaxBatch int
	// IndexBuckets is the total number of index buckets over all shards;
	// 0 sizes the index for every item the memory limit can hold at half
	// load.
	IndexBuckets int
	// Clock returns unix seconds; nil means the system clock.
	Clock func() int64
	// Logger receives the engine's messages; nil means slog.Default().
	Logger *slog.Logger

	// searchDelay, in tests, makes every batched search call take at
	// least this long, as a GPU's does (a few to tens of microseconds),
	// so that the CPU engine exercises the GPU's timings.
	searchDelay time.Duration
	// holdSchedulers, in tests, keeps every shard's scheduler goroutine
	// from its first step until it is closed.
	holdSchedulers <-chan struct{}
}

// Engine is the Mega-KV key-value engine: items in an itemstore, their
// index in one hash index per shard (one shard per GPU, or one on the CPU
// engine), fed in batches by a scheduler per shard. It implements kv.Cache:
// each Batch runs as if its Ops ran one after the other, concurrent Batches
// as if in some order, and a write returns only after the index holds it.
type Engine struct {
	store    *itemstore.Store
	shards   []*shard
	devs     engine.Shards // the GPUs of the shards, none on the CPU
	backend  string
	reason   string
	interval time.Duration
	// inlineUpd: some shard's callers apply overdue updates (overdue.go)
	inlineUpd bool
	opts      Options
	clock     func() int64
	log       *slog.Logger
	started   time.Time

	cas     atomic.Uint64 // the last CAS given out
	flushMu sync.RWMutex
	flush   kv.FlushState

	locks   [stripes]sync.Mutex
	pend    pendingTable // writes acknowledged, not yet in the index
	counts  counters
	getLat  latencyHist                   // per read group, engine entry to results
	setLat  latencyHist                   // per write group
	idxLat  latencyHist                   // per search batch call
	updLat  latencyHist                   // per update round call
	idxSize latencyHist                   // jobs per search batch (counts, not durations)
	scratch sync.Pool                     // *scratch
	prof    *profile                      // nil unless Options.Profile
	persist []*hashindex.PersistentSearch // the GPU shards' persistent searches

	// inflightItems counts items held by queued updates (new items and
	// removed ones): with the pending table, what a quiet engine has
	// none of.
	inflightItems atomic.Int64

	closeMu sync.RWMutex
	closed  bool
}

// New starts an engine: it opens the devices, allocates the index and the
// item store and starts the schedulers. Cost: the index table's allocation
// (64 bytes a bucket) and, on a GPU, the kernels' compilation on first use.
func New(o Options) (*Engine, error) {
	if o.MemoryLimit == 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if o.ItemSizeMax == 0 {
		o.ItemSizeMax = kv.DefaultItemSizeMax
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxBatch > hashindex.MaxBatch {
		return nil, fmt.Errorf("server: new engine: MaxBatch %d above the index's %d", o.MaxBatch, hashindex.MaxBatch)
	}
	if err := pickMode("GPU search", &o.GPUSearch, GPUSearchPersistent, GPUSearchStaged); err != nil {
		return nil, err
	}
	if err := pickMode("CPU search", &o.CPUSearch, CPUSearchInline, CPUSearchBatched); err != nil {
		return nil, err
	}
	if err := pickMode("inline updates", &o.InlineUpdates, InlineUpdatesCPU, InlineUpdatesAll, InlineUpdatesOff); err != nil {
		return nil, err
	}
	if err := pickMode("search launch", &o.SearchLaunch, SearchLaunchNames()[0], SearchLaunchNames()[1:]...); err != nil {
		return nil, err
	}
	switch o.Policy {
	case "":
		o.Policy = PolicyLoad
	case PolicyLoad, PolicyFixed:
	default:
		return nil, fmt.Errorf("server: new engine: batch policy %q (want %s or %s)", o.Policy, PolicyLoad, PolicyFixed)
	}
	e := &Engine{opts: o, clock: o.Clock, log: o.Logger, started: time.Now()}
	if o.Profile {
		e.prof = new(profile)
	}
	if e.clock == nil {
		e.clock = func() int64 { return time.Now().Unix() }
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	st, err := itemstore.New(itemstore.Options{
		MemoryLimit: o.MemoryLimit, ItemSizeMax: o.ItemSizeMax,
		GrowthFactor: o.GrowthFactor, ChunkMin: o.ChunkMin, Slabs: o.Slabs,
	})
	if err != nil {
		return nil, fmt.Errorf("server: new engine: %w", err)
	}
	e.store = st
	if err := e.openIndex(); err != nil {
		e.closeAll()
		return nil, fmt.Errorf("server: new engine: %w", err)
	}
	e.scratch.New = func() any { return new(scratch) }
	return e, nil
}

// openIndex chooses the devices and starts one shard on each.
func (e *Engine) openIndex() error {
	shards, err := engine.PlaceAll(e.opts.Device)
	if err != nil {
		return err
	}
	e.devs, e.reason = shards, shards.Reason
	devs := shards.GPUs
	nShards := max(1, len(devs))
	if len(devs) == 0 && e.opts.CPUShards > 1 {
		nShards = e.opts.CPUShards
	}
	buckets := e.opts.IndexBuckets
	if buckets <= 0 {
		// Every item the memory could hold (smallest chunks), at three
		// quarters load of the 8-cell buckets at most (measured: no
		// insert dropped at 0.75, 0.03% at 0.85); rounding up to a power
		// of two lowers it. Half load cost a sixth to a third of -m.
		items := e.opts.MemoryLimit / 96
		buckets = max(minBuckets*nShards, int(min(items/6, hashindex.MaxBuckets)))
	}
	per := 1 << bits.Len(uint(max(buckets/nShards, 2)-1))
	interval := e.opts.Interval
	e.backend = "cpu"
	if len(devs) > 0 {
		e.backend = "gpu"
		if interval == 0 {
			interval = DefaultGPUInterval
		}
	}
	e.interval = max(interval, 0)
	for i := range nShards {
		io := hashindex.Options{Buckets: per, Device: "cpu"}
		if len(devs) > 0 {
			io.GPU = devs[i].Device
		}
		ix, err := hashindex.Open(io)
		if err != nil {
			return fmt.Errorf("index shard %d: %w", i, err)
		}
		newSpace := func() (searchSpace, error) {
			st, err := ix.NewStaging(e.opts.MaxBatch)
			if err != nil {
				return nil, err
			}
			if e.opts.searchDelay > 0 {
				return delayedSpace{stagedSpace{Staging: st, ix: ix}, e.opts.searchDelay}, nil
			}
			return stagedSpace{Staging: st, ix: ix}, nil
		}
		// Staged calls run one at a time (the index's write lock): a
		// shard has more batch buffers than searchBatches only where its
		// callers search at the same time, in the slots of a persistent
		// search.
		batches := searchBatches
		if len(devs) > 0 && e.opts.GPUSearch == GPUSearchPersistent {
			slots := searchBatches
			if e.opts.SearchLaunch == SearchLaunchConcurrent {
				slots = concurrentBatches
			}
			ps, err := ix.NewPersistentSearch(slots, e.opts.MaxBatch)
			if err != nil {
				e.log.Warn("server: no persistent search; batches are staged calls", "shard", i, "err", err)
			} else {
				batches = slots
				e.persist = append(e.persist, ps)
				next := 0
				newSpace = func() (searchSpace, error) {
					next++
					return ps.Slot(next - 1), nil
				}
			}
		}
		sh, err := newShard(ix, e.opts.Policy == PolicyFixed, e.interval, e.opts.MaxBatch, newSpace, shardHooks{
			searchLat: &e.idxLat, updateLat: &e.updLat, searchSize: &e.idxSize, unlink: e.unlinker(), complete: e.completeUpdate, prof: e.prof,
			inline: len(devs) == 0 && e.opts.CPUSearch == CPUSearchInline && ix.Shared(),
			launch: e.opts.SearchLaunch, batches: batches, hold: e.opts.holdSchedulers,
			inlineUpd: e.opts.InlineUpdates == InlineUpdatesAll || (e.opts.InlineUpdates == InlineUpdatesCPU && len(devs) == 0)})
		if err != nil {
			ix.Close()
			return fmt.Errorf("index shard %d: %w", i, err)
		}
		e.shards = append(e.shards, sh)
		e.inlineUpd = e.inlineUpd || sh.inlineUpd
	}
	return nil
}

// Backend is "gpu" or "cpu".
func (e *Engine) Backend() string { return e.backend }

// Reason says which engine was chosen and why.
func (e *Engine) Reason() string { return e.reason }

// Shards returns the number of index shards (GPUs, or 1 on the CPU).
func (e *Engine) Shards() int { return len(e.shards) }

// InlineSearch reports whether searches run inline on the callers'
// goroutines (the CPU engine with CPUSearch "inline") rather than in the
// shards' search batches.
func (e *Engine) InlineSearch() bool { return e.shards[0].inline != nil }

// Interval returns the batch interval C in use.
func (e *Engine) Interval() time.Duration { return e.interval }

// StageClock returns the engine's profile as a protocol.StageClock, or nil
// without Options.Profile.
func (e *Engine) StageClock() protocol.StageClock {
	if e.prof == nil {
		return nil
	}
	return e.prof
}

// Now returns the engine's clock in unix seconds.
func (e *Engine) Now() int64 { return e.clock() }

// Close stops the schedulers after they serve the queued jobs, then frees
// the index, the devices and the item memory. Do fails afterwards.
func (e *Engine) Close() error {
	e.closeMu.Lock()
	if e.closed {
		e.closeMu.Unlock()
		return nil
	}
	e.closed = true
	e.closeMu.Unlock()
	return e.closeAll()
}

func (e *Engine) closeAll() error {
	var errs []error
	for _, s := range e.shards {
		s.close()
		errs = append(errs, s.ix.Close())
	}
	errs = append(errs, e.devs.Release())
	if e.store != nil {
		errs = append(errs, e.store.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("server: close engine: %w", err)
	}
	return nil
}

// shardOf returns the shard of a key hash: a multiplicative mix of all its
// bits, so that shards take no bits the index uses on its own.
func (e *Engine) shardOf(h uint64) int {
	if len(e.shards) == 1 {
		return 0
	}
	m := uint64(uint32((h * 0x9E3779B97F4A7C15) >> 32))
	return int(m * uint64(len(e.shards)) >> 32)
}

// nextCAS returns a fresh CAS value.
func (e *Engine) nextCAS() uint64 { return e.cas.Add(1) }

// flushState returns a copy of the flush state to check items against.
func (e *Engine) flushState() kv.FlushState {
	e.flushMu.RLock()
	defer e.flushMu.RUnlock()
	return e.flush
}

// pickMode checks an option that names one of two modes: "" becomes def,
// def and other are kept, anything else is an error naming the option
// (what) and both modes.
func pickMode(what string, mode *string, def string, others ...string) error {
	if *mode == "" {
		*mode = def
	}
	if *mode == def || slices.Contains(others, *mode) {
		return nil
	}
	return fmt.Errorf("server: new engine: %s %q (want %s or %s)", what, *mode, def, strings.Join(others, " or "))
}
