package art

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// The GPU engine keeps the whole tree in device memory, in the CPU
// engine's layout (a store, word for word), and runs every batch as
// kernels of art.cu and prim primitives on one stream. Between steps the
// host reads back a few totals (allocations per kind, pieces, groups) to
// size the next launches and grow the pools, never the tree.
//
// Out of device memory: every record a batch may allocate is reserved (the
// pools grown) before the first write to the tree that other records can
// see: an insert's build rounds write only fresh records (its tree changes
// start at the node round, after its allocations), a delete reserves its
// bounded allocations and scratch first, and a build writes a new tree
// beside the old one. A failed allocation returns an error matching
// gpu.ErrOutOfMemory and leaves the tree as it was.

// devPool is one kind's record buffer on the device with its free stack
// and the records the batch in progress freed (pushed at its end).
type devPool struct {
	words      *gpu.Buffer[uint64]
	free, pend *gpu.Buffer[uint32]
	cap        uint64 // records the buffers hold
	hwm, top   uint64
	pendN      uint64
	vm         *poolVM // the reserved ranges words, free and pend view (pool_vmm_gpu.go); nil: buffers
}

// devTree is a tree on the device.
type devTree struct {
	pools     [numKinds + 1]devPool
	arena     *gpu.Buffer[byte]
	arenaCap  uint64
	arenaLen  uint64
	arenaLive uint64
	root      *gpu.Buffer[uint64]
	width     int
	n         int
}

// gpuEngine is the GPU engine. mu serializes its calls (they share the
// pool's buffers, the pipelines and the stream).
type gpuEngine struct {
	mu      sync.Mutex
	dev     *gpu.Device
	pe      *prim.Engine
	s       *gpu.Stream // prim's stream: every kernel, copy and transfer
	k       *kernelSet
	clock   *engine.Clock
	last    engine.Last
	workers int

	t       *devTree
	desc    treeDesc
	descBuf *gpu.Buffer[uint64]

	// pool holds the batches' scratch buffers by name (reused across
	// batches, grown with headroom); up and down stage the transfers
	// between Go memory and the device through pinned chunks
	// (transfer_gpu.go).
	pool     *gpu.Pool
	up, down *gpu.Pipeline

	// in and out carry the transfers of pipelined point calls (lookups,
	// updates: point_gpu.go) beside the kernels on s; kev are their
	// chunks' kernel events (two per chunk, for LastBatch's Work);
	// chunkMin is their smallest chunk in keys (pointChunkMin; tests set
	// fewer).
	in, out  *gpu.Stream
	kev      []*gpu.Event
	valsEv   *gpu.Event // a structural batch's values on the device (startVals)
	chunkMin int

	// chunkUnits is the units of a full chunk of a point call when its
	// chunks are graded (pointGroups); 0 or 1, the default, cuts them
	// into chunks of one size. Benchmarks compare.
	chunkUnits int

	// queueOnCaller queues a point call's chunks from Go memory on the
	// calling goroutine between its packing (gpu.Pipeline.Run) instead of
	// on a goroutine of their own (runBeside). Benchmarks compare.
	queueOnCaller bool

	// lanes is the lanes per key of lookups (1: ag_get, lookupLanes:
	// ag_get_lanes).
	lanes int

	// sortQueries makes large batches of range and prefix queries walk in
	// the order of their start keys (queryOrder). Off by default: its
	// answers were checked on an H200 (TestGPURangeForms, 2026-11-28) but
	// its speed has not been measured.
	sortQueries bool

	// collectRanges answers bounded range and prefix queries with the
	// earlier single-walk kernels (rangesSlots: aq_collect, aq_emit)
	// instead of rangesCands; tests compare the two.
	collectRanges bool

	// walkLanes is the lanes per query of the walk of rangesCands: 1,
	// aq_cands (a thread per query, stepping a cursor); 8, 16 or 32,
	// aq_walk8/16/32 (walk.cu: a tile of lanes per query reading a node's
	// positions together). Tests and benchmarks compare them.
	walkLanes int

	// pipe sets and holds the events of pipelined range and prefix calls
	// into pinned Results (ranges_pipe_gpu.go, ranges_piped_gpu.go).
	pipe rangePipe

	// aheadGrowth grows the pools an insert may outgrow on another
	// goroutine while its keys are uploaded and sorted (growAhead; on by
	// default, benchmarks compare).
	aheadGrowth bool

	// bu uploads structural batches: keys in parts beside the sort,
	// values beside the work (sort_parts_gpu.go).
	bu batchUpload
	// hint is the facade's word on the lengths of the batch under way
	// (Tree.hint; set and cleared under the facade's write lock).
	hint lengthHint
	// deferCheck lets the facade leave the check of an insert's batch of
	// one length to the engine (check_later_gpu.go; on by default,
	// benchmarks compare); later is that check while it runs.
	deferCheck bool
	later      *laterCheck

	// late are the counts of an insert's frees per inner node kind,
	// pushed on the device's free stacks in its node round and downloaded
	// into this pinned buffer without a synchronization (pushLate): the
	// host's stack heights take them after the batch drained
	// (applyLate); nil when none are pending.
	late []uint32

	// freeBeside frees the buffers a batch retired (pools grown) on
	// another goroutine once the batch is drained, instead of before
	// the call returns (on by default; benchmarks compare): at 100M keys
	// the first insert after a build retires an N16 pool of about 2 GB,
	// whose cuMemFree cost the call 3.4 to 7 ms. freeing counts those
	// goroutines and pending how many run: builds, deletes, queries, point
	// calls, snapshots and release wait for them first (waitFrees); an
	// insert runs beside them and, out of memory while they ran, waits
	// and runs again (the failed try left the tree unchanged); freeErr,
	// under freeMu, keeps their errors for the next batch. beforeRetry
	// (tests) runs before that second try.
	freeBeside  bool
	freeing     sync.WaitGroup
	pending     atomic.Int32
	beforeRetry func()
	freeMu      sync.Mutex
	freeErr     error

	// vmm grows new pools in place on reserved ranges of addresses
	// (pool_vmm_gpu.go): on where the device has virtual memory
	// management; tests and benchmarks turn it off to run the buffers'
	// way (the fallback) on the same device.
	vmm bool
	// inPlaceMin is the bytes of records from which a pool grows in place
	// (inPlaceMinBytes; tests set less).
	inPlaceMin uint64

	// failGrowth (tests) makes every growth of a pool or the arena fail as
	// if the device were out of memory.
	failGrowth bool

	// lazy, when set, completes LastBatch's Timings of the latest batch,
	// lazyAt, from its events when LastBatch asks (finishLazy).
	lazy        func()
	lazyAt      engine.Timings
	lazyPending atomic.Bool // lazy is set: LastBatch takes the lock to read it (main's LastBatch takes none)

	// trace (benchmarks and tests; nil by default) profiles the steps of
	// structural batches (trace_gpu.go).
	trace *engine.StepTrace

	// retired are device buffers a batch replaced (a pool or the arena
	// grown) while copies out of them may still be queued on s: freed
	// once s is drained (freeRetired).
	retired []interface{ Free() error }
}

// newGPUEngine returns an empty tree on d. The kernels are compiled here,
// so that a broken toolchain is reported by New.
func newGPUEngine(d *gpu.Device, workers int) (backend, error) {
	g := &gpuEngine{dev: d, workers: workers, chunkMin: pointChunkMin, aheadGrowth: true, deferCheck: true, freeBeside: true, walkLanes: defaultWalkLanes}
	_, err := d.VMMGranularity()
	g.vmm, g.inPlaceMin = err == nil, inPlaceMinBytes
	if g.pe, err = prim.NewGPU(d); err != nil {
		return nil, err
	}
	g.s = g.pe.Stream()
	g.pool, g.up, g.down = gpu.NewPool(d, g.s), newPipeline(d), newPipeline(d)
	if g.in, err = d.NewStream(); err == nil {
		g.out, err = d.NewStream()
	}
	if err != nil {
		return nil, errors.Join(err, g.release())
	}
	if g.k, err = loadKernels(d); err == nil {
		if g.clock, err = engine.NewGPUClock(d); err == nil {
			if g.descBuf, err = gpu.Alloc[uint64](d, descWords); err == nil {
				g.t, err = g.newTree(0)
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, g.release())
	}
	return g, nil
}

// newTree returns an empty device tree of root width w.
func (g *gpuEngine) newTree(w int) (*devTree, error) {
	t := &devTree{width: w}
	var err error
	if t.root, err = gpu.Alloc[uint64](g.dev, rootLen(w)); err != nil {
		return nil, fmt.Errorf("root array of width %d: %w", w, err)
	}
	if err := t.root.FillBytes(g.s, 0); err != nil {
		return nil, errors.Join(err, t.root.Free())
	}
	return t, nil
}

// free releases a device tree's buffers. Cost: a synchronization.
func (g *gpuEngine) freeTree(t *devTree) error {
	if t == nil {
		return nil
	}
	err := g.s.Synchronize()
	for k := range t.pools {
		p := &t.pools[k]
		err = errors.Join(err, p.words.Free(), p.free.Free(), p.pend.Free(), p.vm.release())
		*p = devPool{}
	}
	err = errors.Join(err, t.arena.Free(), t.root.Free())
	t.arena, t.root = nil, nil
	return err
}

func (g *gpuEngine) close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.release()
}

// release frees everything the engine holds (what it holds of it: a
// failed newGPUEngine calls it too). Cost: a synchronization and the
// frees.
func (g *gpuEngine) release() error {
	g.freeing.Wait()
	g.freeBeside = false // the last frees here, before the device goes
	err := errors.Join(g.freeTree(g.t), g.freeRetired(), g.descBuf.Free(), g.pool.Free(), g.up.Close(), g.down.Close())
	g.t = nil
	for _, s := range []*gpu.Stream{g.in, g.out} {
		if s != nil {
			err = errors.Join(err, s.Synchronize(), s.Close())
		}
	}
	g.in, g.out = nil, nil
	for _, e := range g.kev {
		err = errors.Join(err, e.Close())
	}
	g.kev = nil
	err = errors.Join(err, g.pipe.close())
	if g.valsEv != nil {
		err = errors.Join(err, g.valsEv.Close())
	}
	err = errors.Join(err, g.bu.close())
	if g.clock != nil {
		err = errors.Join(err, g.clock.Close())
	}
	err = errors.Join(err, g.trace.Close())
	return errors.Join(err, g.pe.Close())
}

// ensurePool grows kind k's buffers of tree t to hold need records,
// keeping their contents. On failure nothing changes. Cost: in place
// (g.inPlace), the mapping of the growth (growInPlace; a pool of buffers
// that moves in place also copies its records once); else an allocation
// and a device copy of the records in use when it grows, queued on g.s,
// the old buffers retired (freed after the batch), so the batch does not
// wait for the copy.
func (g *gpuEngine) ensurePool(t *devTree, k int, need uint64) error {
	p := &t.pools[k]
	if need <= p.cap && p.words != nil {
		return nil
	}
	if g.failGrowth {
		return fmt.Errorf("%d records of kind %d: %w (test)", growCap(p.cap, need), k, gpu.ErrOutOfMemory)
	}
	if nc := growCap(p.cap, need); g.inPlace(t, k, nc) {
		err := g.growInPlace(t, k, nc)
		if err == nil || p.vm != nil {
			return err
		}
		// No ranges could be reserved or mapped: buffers.
	}
	nb, err := allocPool(g.dev, k, growCap(p.cap, need))
	if err != nil {
		return err
	}
	return g.adoptPool(t, k, nb)
}

// growCap is the capacity a pool of cap records grows to for need:
// half again as many, or need if that is more, and at least 64.
func growCap(cap, need uint64) uint64 { return max(need, cap+cap/2, 64) }

// poolBufs are the buffers of a pool of cap records of one kind.
type poolBufs struct {
	words      *gpu.Buffer[uint64]
	free, pend *gpu.Buffer[uint32]
	cap        uint64
}

// allocPool allocates the buffers of a pool of nc records of kind k (all
// or none). It makes no stream calls, so another goroutine may run it
// beside a batch. Cost: three cuMemAlloc.
func allocPool(d *gpu.Device, k int, nc uint64) (poolBufs, error) {
	words, err := gpu.Alloc[uint64](d, int(nc*uint64(kindWords[k])))
	if err != nil {
		return poolBufs{}, fmt.Errorf("%d records of kind %d: %w", nc, k, err)
	}
	free, err := gpu.Alloc[uint32](d, int(nc))
	if err != nil {
		return poolBufs{}, errors.Join(fmt.Errorf("free stack of %d: %w", nc, err), words.Free())
	}
	pend, err := gpu.Alloc[uint32](d, int(nc))
	if err != nil {
		return poolBufs{}, errors.Join(fmt.Errorf("free list of %d: %w", nc, err), words.Free(), free.Free())
	}
	return poolBufs{words: words, free: free, pend: pend, cap: nc}, nil
}

// release frees the buffers (after a failure, or when they were not
// needed). Cost: up to three cuMemFree.
func (b poolBufs) release() error { return errors.Join(b.words.Free(), b.free.Free(), b.pend.Free()) }

// adoptPool makes nb (more records than the pool holds) kind k's buffers
// of tree t: the records, free stack and pending frees in use are copied
// on g.s and the old buffers retired. On failure nb is freed and nothing
// changes. Cost: the device copy, queued.
func (g *gpuEngine) adoptPool(t *devTree, k int, nb poolBufs) error {
	p := &t.pools[k]
	if p.words != nil {
		kw := uint64(kindWords[k])
		err := errors.Join(nb.words.CopyFrom(g.s, 0, p.words, 0, int(p.hwm*kw)),
			nb.free.CopyFrom(g.s, 0, p.free, 0, int(p.top)), nb.pend.CopyFrom(g.s, 0, p.pend, 0, int(p.pendN)))
		if err != nil {
			return errors.Join(err, g.s.Synchronize(), nb.release())
		}
		g.retired = append(g.retired, p.words, p.free, p.pend)
	}
	p.words, p.free, p.pend, p.cap = nb.words, nb.free, nb.pend, nb.cap
	return nil
}

// ensureArena grows tree t's arena to hold need bytes (the old one
// retired, as ensurePool's buffers).
func (g *gpuEngine) ensureArena(t *devTree, need uint64) error {
	if need <= t.arenaCap && t.arena != nil {
		return nil
	}
	nc := max(need, t.arenaCap+t.arenaCap/2, 1024)
	if g.failGrowth {
		return fmt.Errorf("arena of %d bytes: %w (test)", nc, gpu.ErrOutOfMemory)
	}
	a, err := gpu.Alloc[byte](g.dev, int(nc))
	if err != nil {
		return fmt.Errorf("arena of %d bytes: %w", nc, err)
	}
	if t.arena != nil {
		if err := a.CopyFrom(g.s, 0, t.arena, 0, int(t.arenaLen)); err != nil {
			return errors.Join(err, g.s.Synchronize(), a.Free())
		}
		g.retired = append(g.retired, t.arena)
	}
	t.arena, t.arenaCap = a, nc
	return nil
}

// reserve grows tree t's pools so that req[k] more allocations of each kind
// fit (past the free stack), and its arena by arenaBytes.
func (g *gpuEngine) reserve(t *devTree, req [numKinds + 1]uint64, arenaBytes uint64) error {
	for k := kindN4; k <= kindLV; k++ {
		p := &t.pools[k]
		if req[k] == 0 && p.words != nil {
			continue
		}
		fresh := uint64(0)
		if req[k] > p.top {
			fresh = req[k] - p.top
		}
		if err := g.ensurePool(t, k, p.hwm+fresh); err != nil {
			return err
		}
	}
	return g.ensureArena(t, t.arenaLen+arenaBytes)
}

// consume records req[k] allocations of each kind (store.alloc's counter
// update) and arenaBytes of arena.
func (t *devTree) consume(req [numKinds + 1]uint64, arenaBytes uint64) {
	for k := kindN4; k <= kindLV; k++ {
		p := &t.pools[k]
		if req[k] > p.top {
			p.hwm += req[k] - p.top
			p.top = 0
		} else {
			p.top -= req[k]
		}
	}
	t.arenaLen += arenaBytes
	t.arenaLive += arenaBytes
}

// counters are the allocation counters of a tree, to roll a failed batch
// back.
type counters struct {
	hwm, top, pendN     [numKinds + 1]uint64
	arenaLen, arenaLive uint64
}

func (t *devTree) counters() counters {
	var c counters
	for k := range t.pools {
		c.hwm[k], c.top[k], c.pendN[k] = t.pools[k].hwm, t.pools[k].top, t.pools[k].pendN
	}
	c.arenaLen, c.arenaLive = t.arenaLen, t.arenaLive
	return c
}

func (t *devTree) restore(c counters) {
	for k := range t.pools {
		t.pools[k].hwm, t.pools[k].top, t.pools[k].pendN = c.hwm[k], c.top[k], c.pendN[k]
	}
	t.arenaLen, t.arenaLive = c.arenaLen, c.arenaLive
}

// setDesc writes the descriptor of tree t (and the batch's buffers) for
// the next kernels. Cost: a 0.5 KB upload on the stream.
func (g *gpuEngine) setDesc(t *devTree, b *devBatch) error {
	d := &g.desc
	*d = treeDesc{}
	for k := kindN4; k <= kindLV; k++ {
		p := &t.pools[k]
		if p.words != nil {
			d.pool[k], d.free[k], d.pend[k] = uint64(p.words.Ptr()), uint64(p.free.Ptr()), uint64(p.pend.Ptr())
		}
		d.hwm[k], d.top[k] = p.hwm, p.top
	}
	if t.arena != nil {
		d.arena = uint64(t.arena.Ptr())
	}
	d.root = uint64(t.root.Ptr())
	d.width, d.tlen = uint64(t.width), uint64(tableLen(t.width))
	d.arenaBase = t.arenaLen
	if b != nil {
		d.bdata, d.boffs = uint64(b.data.Ptr()), uint64(b.offs.Ptr())
		if b.vals != nil {
			d.bvals = uint64(b.vals.Ptr())
		}
	}
	return g.descBuf.Write(g.s, 0, d.words())
}

// flushFrees pushes the batch's freed records on the free stacks (per kind
// in the order freed). Cost: one device copy per kind.
func (g *gpuEngine) flushFrees(t *devTree) error {
	for k := kindN4; k <= kindLV; k++ {
		p := &t.pools[k]
		if p.pendN == 0 {
			continue
		}
		if err := p.free.CopyFrom(g.s, int(p.top), p.pend, 0, int(p.pendN)); err != nil {
			return err
		}
		p.top += p.pendN
		p.pendN = 0
	}
	return nil
}

// launch queues f over n items with the package's launch configuration; a
// failure names the kernel (and, with WARPKV_GPU_SYNC=1, a fault inside it).
func (g *gpuEngine) launch(f *gpu.Function, n int, args ...any) error {
	if n <= 0 {
		return nil
	}
	if err := f.Launch(g.s, grid(n), gpu.D1(kernelBlock), 0, args...); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return nil
}

func (g *gpuEngine) size() int  { g.mu.Lock(); defer g.mu.Unlock(); return g.t.n }
func (g *gpuEngine) width() int { g.mu.Lock(); defer g.mu.Unlock(); return g.t.width }

// lastBatch returns the Timings of the engine's latest batch; a batch
// that left them to be read later (finishLazy: a pipelined range call) has
// them read from its events now, under the engine's lock. Cost: O(1), or
// the deferred cuEventElapsedTime calls once.
func (g *gpuEngine) lastBatch() engine.Timings {
	if g.lazyPending.Load() {
		g.mu.Lock()
		g.readTimings()
		g.mu.Unlock()
	}
	return g.last.Get()
}

// readTimings reads the Timings a batch left to read later (finishLazy),
// if the batch is still the latest: the events are not recorded again
// before the next batch's start, which drops what it did not read. The
// caller holds g.mu. Cost: the deferred cuEventElapsedTime calls.
func (g *gpuEngine) readTimings() {
	g.lazyPending.Store(false)
	if g.lazy == nil {
		return
	}
	if g.last.Get() == g.lazyAt {
		tm := g.clock.Timings(g.lazyAt.Op, g.lazyAt.Items)
		tm.Total = g.lazyAt.Total
		g.last.Set(tm)
		g.lazy()
	}
	g.lazy, g.lazyAt = nil, engine.Timings{}
}

// start begins a timed batch (the previous batch's Timings left to read
// later, finishLazy, are dropped).
func (g *gpuEngine) start() {
	if g.lazy != nil {
		g.lazy, g.lazyAt = nil, engine.Timings{}
		g.lazyPending.Store(false)
	}
	g.clock.Start()
	g.clock.Mark(g.s, engine.MarkStart)
	g.trace.Start()
	g.step("start")
}

// finish ends a timed batch (its downloads complete, the stream
// synchronized) and records it.
func (g *gpuEngine) finish(op string, n int) error {
	if err := g.settle(); err != nil {
		return err
	}
	g.last.Set(g.clock.Timings(op, n))
	return nil
}

// settle is what finish and finishLazy share: the batch's done mark and
// trace step, the drain of its downloads and the free of the memory it
// retired.
func (g *gpuEngine) settle() error {
	g.clock.Mark(g.s, engine.MarkDone)
	g.trace.Synced()
	g.step("done")
	if err := g.drain(); err != nil {
		return err
	}
	return g.freeRetired()
}

// finishLazy is finish for a batch whose caller does not wait for its
// Timings: it records the batch's op, size and Total (the host time since
// start) at once, and leaves the phases (the clock's events) and more
// (more: what else sets the Timings from events, run after them) to be
// read when LastBatch asks, if no batch started since (readTimings). The
// call saves the cuEventElapsedTime calls, 4 and 4 a chunk for a
// pipelined range call.
func (g *gpuEngine) finishLazy(op string, n int, more func()) error {
	if err := g.settle(); err != nil {
		return err
	}
	g.lazyAt = engine.Timings{Op: op, Items: n, Total: g.clock.Since()}
	g.last.Set(g.lazyAt)
	g.lazy = more
	g.lazyPending.Store(true)
	return nil
}

// freeRetired frees the buffers batches retired; the stream must have
// passed every copy out of them (the batch drained). With freeBeside the
// frees run on another goroutine (the call does not wait for them), and
// their error comes back from the next freeRetired. Cost: one free per
// buffer (with freeBeside, on another goroutine).
func (g *gpuEngine) freeRetired() error {
	err := g.besideErr()
	if len(g.retired) == 0 {
		return err
	}
	if g.freeBeside {
		rs := append([]interface{ Free() error }(nil), g.retired...)
		g.freeing.Add(1)
		g.pending.Add(1)
		go func() {
			defer g.freeing.Done()
			defer g.pending.Add(-1)
			var ferr error
			for _, b := range rs {
				ferr = errors.Join(ferr, b.Free())
			}
			if ferr != nil {
				g.freeMu.Lock()
				g.freeErr = errors.Join(g.freeErr, ferr)
				g.freeMu.Unlock()
			}
		}()
	} else {
		for _, b := range g.retired {
			err = errors.Join(err, b.Free())
		}
	}
	clear(g.retired)
	g.retired = g.retired[:0]
	return err
}

// waitFrees waits for the frees freeRetired runs beside earlier batches
// (freeBeside), so that a batch allocates only after the memory they
// return is free, and cuMemFree never runs beside its work. Cost: O(1)
// when they are done; else the rest of the frees.
func (g *gpuEngine) waitFrees() { g.freeing.Wait() }

// freesPending reports whether frees freeRetired started beside earlier
// batches still run. Cost: O(1).
func (g *gpuEngine) freesPending() bool { return g.pending.Load() > 0 }

// besideErr returns (and forgets) the errors of the frees freeRetired ran
// beside earlier batches.
func (g *gpuEngine) besideErr() error {
	g.freeMu.Lock()
	defer g.freeMu.Unlock()
	err := g.freeErr
	g.freeErr = nil
	return err
}

// snapshot downloads the tree into a store. Cost: a transfer of the tree
// (through the download pipeline).
func (g *gpuEngine) snapshot() (*store, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waitFrees()
	g.down.Discard()
	t := g.t
	s := &store{width: t.width, n: t.n, arenaLive: t.arenaLive}
	s.root = make([]uint64, rootLen(t.width))
	err := gpu.DownloadStaged(g.down, g.s, t.root, 0, s.root)
	for k := kindN4; k <= kindLV && err == nil; k++ {
		p := &t.pools[k]
		sp := &s.pools[k]
		sp.hwm = p.hwm
		sp.words = make([]uint64, int(p.hwm)*kindWords[k])
		sp.free = make([]uint32, p.top)
		if p.words != nil {
			err = errors.Join(gpu.DownloadStaged(g.down, g.s, p.words, 0, sp.words), gpu.DownloadStaged(g.down, g.s, p.free, 0, sp.free))
		}
	}
	s.arena = make([]byte, t.arenaLen)
	if err == nil && t.arena != nil {
		err = gpu.DownloadStaged(g.down, g.s, t.arena, 0, s.arena)
	}
	if err != nil {
		g.down.Discard()
		return nil, errors.Join(err, g.s.Synchronize())
	}
	return s, g.drain()
}

// nullPtr is a null device pointer argument (a kernel's optional buffer).
var nullPtr = gpu.DevicePtr(0)
