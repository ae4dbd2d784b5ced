package btree

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// gpuTree is the GPU engine: the node arrays of the CPU engine's layout,
// flat in device memory (node id owns keys and slots [id*order,
// (id+1)*order) and element id of the others), and every kernel queued on
// the stream of one prim engine. mu serializes the engine's calls, which
// share the scratch buffers.
type gpuTree struct {
	mu    sync.Mutex
	order int
	fill  int
	dev   *gpu.Device
	pe    *prim.Engine
	s     *gpu.Stream // the prim engine's stream: every kernel and the tree's order of work
	s2    *gpu.Stream // the second stream of overlapped transfers (lookup chunks, build values)
	join  [2]*gpu.Event
	k     *kernelSet
	clock *engine.Clock // phase events of the batch in progress
	st    treeState     // the bookkeeping of the tree in the node arrays

	// Node arrays, capacity capNodes (a multiple of segNodes); nodes are
	// in use (live or free, as in the CPU engine's store).
	keys, slots              *gpu.Buffer[uint64]
	count, parent, next, prv *gpu.Buffer[uint32]
	kind                     *gpu.Buffer[uint8]
	capNodes, nodes          int
	height                   int // levels, leaves included; 0 when empty

	// Scratch reused across calls, grown with headroom: the batch's
	// buffers (bufInK ...) and the update phases' named ones, reserved
	// before a batch changes the tree.
	pool *gpu.Pool

	up, down *gpu.Pipeline // pinned staging of uploads and downloads (staging_gpu.go)

	// rangeForm picks the range kernels (ranges_gpu.go): rangeOneDescent
	// by default; tests and benchmarks set the others (bt_range, one
	// thread per query descending in both passes; bt_range_warp, a warp
	// per query) to compare them (BENCHMARKS.md).
	rangeForm rangeForm

	// trace, when set (benchmarks), profiles the steps of each batch
	// (trace_gpu.go); values is the values' upload still running on s2
	// (sort_gpu.go).
	trace  *engine.StepTrace
	values *valuesUpload

	// flatMerge turns bt_merge_leaves_E off (warpMerge): benchmarks and
	// tests compare the two merges.
	flatMerge bool
	// wholeUpload turns the keys' upload in two halves off (splitUpload):
	// benchmarks and tests compare the two.
	wholeUpload bool
	// copyGrain, when positive, replaces batchGrain as the elements a
	// goroutine copies at a time in sortDedupe's uploads from Go slices:
	// benchmarks compare grains.
	copyGrain int
	// rangeChunkSize, when positive, replaces gpuRangeChunk as the queries
	// of one chunk of a ranges call (tests cut small batches into
	// several); rangeEv are the events of the chunks' writes.
	rangeChunkSize int
	rangeEv        []*gpu.Event
	rangeTot       *gpu.MappedBuffer[uint64] // a pipelined ranges call's chunk totals (ranges_piped_gpu.go)

	// lateValues makes an insert from Go slices scatter its values after
	// the upper levels even when their copy has already queued its last
	// chunk (mergeValuesFor): benchmarks compare the two.
	lateValues bool
}

// Names of the batch's buffers in the pool.
const (
	bufInK      = "in.keys"    // the batch's keys (queries, range starts)
	bufInV      = "in.values"  // its values (range ends)
	bufOutK     = "out.keys"   // the sorted unique keys (range result keys)
	bufOutV     = "out.values" // their values (lookup values, range offsets)
	bufFlags    = "flags"      // per-key flags (lookups: found)
	bufCounters = "counters"   // two uint32 counters of a select
)

// newGPUTree returns an empty GPU engine on d (the caller keeps the
// device). The kernels are compiled here, so that a broken toolchain is
// reported by New.
func newGPUTree(r resolved, d *gpu.Device) (*gpuTree, error) {
	pe, k, err := prim.NewGPUWith(d, loadKernels)
	if err != nil {
		return nil, err
	}
	clock, err := engine.NewGPUClock(d)
	if err != nil {
		return nil, errors.Join(err, pe.Close())
	}
	g := &gpuTree{order: r.order, fill: r.fill, dev: d, pe: pe, s: pe.Stream(), k: k, clock: clock, st: treeState{root: nilNode},
		up: gpu.NewPipeline(d, stageConfig), down: gpu.NewPipeline(d, stageConfig), pool: gpu.NewPool(d, pe.Stream())}
	if g.s2, err = d.NewStream(); err == nil {
		for i := range g.join {
			if g.join[i], err = d.NewEvent(); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, g.closeStreams(), clock.Close(), pe.Close())
	}
	return g, nil
}

// closeStreams destroys the second stream, the join events and the
// ranges' events.
func (g *gpuTree) closeStreams() error {
	var err error
	if g.s2 != nil {
		err = errors.Join(g.s2.Synchronize(), g.s2.Close())
		g.s2 = nil
	}
	for i, e := range g.join {
		if e != nil {
			err = errors.Join(err, e.Close())
			g.join[i] = nil
		}
	}
	for _, e := range g.rangeEv {
		err = errors.Join(err, e.Close())
	}
	g.rangeEv = nil
	err = errors.Join(err, g.rangeTot.Free())
	g.rangeTot = nil
	return err
}

// fork makes the work queued next on s2 wait for everything queued on s so
// far. Cost: an event record and a stream wait.
func (g *gpuTree) fork() error {
	return errors.Join(g.join[0].Record(g.s), g.s2.Wait(g.join[0]))
}

// joinBack makes the work queued next on s wait for everything queued on
// s2 so far. Cost: an event record and a stream wait.
func (g *gpuTree) joinBack() error {
	return errors.Join(g.join[1].Record(g.s2), g.s.Wait(g.join[1]))
}

// close frees the device memory, the streams and the events.
func (g *gpuTree) close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var terr error
	if g.trace != nil {
		terr = g.trace.Close()
	}
	return errors.Join(g.freeNodes(), g.s.Synchronize(), g.closeStreams(), g.up.Close(), g.down.Close(),
		g.pool.Free(), g.clock.Close(), g.pe.Close(), terr)
}

// freeNodes frees the node arrays.
func (g *gpuTree) freeNodes() error {
	if g.keys == nil {
		return nil
	}
	err := errors.Join(g.s.Synchronize(), g.keys.Free(), g.slots.Free(), g.count.Free(), g.parent.Free(),
		g.next.Free(), g.prv.Free(), g.kind.Free())
	g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind = nil, nil, nil, nil, nil, nil, nil
	g.capNodes, g.nodes, g.height = 0, 0, 0
	return err
}

// reserve makes the node arrays hold at least n nodes (rounded up to whole
// segments) and zeroes the first n. Cost: a reallocation when growing (the
// old contents are dropped) and memsets of n nodes.
func (g *gpuTree) reserve(n int) error {
	if n > g.capNodes {
		if err := g.freeNodes(); err != nil {
			return err
		}
		c := (n + n/8 + segMask) &^ segMask
		m := g.order
		var err error
		if g.keys, err = gpu.Alloc[uint64](g.dev, c*m); err == nil {
			if g.slots, err = gpu.Alloc[uint64](g.dev, c*m); err == nil {
				if g.count, err = gpu.Alloc[uint32](g.dev, c); err == nil {
					if g.parent, err = gpu.Alloc[uint32](g.dev, c); err == nil {
						if g.next, err = gpu.Alloc[uint32](g.dev, c); err == nil {
							if g.prv, err = gpu.Alloc[uint32](g.dev, c); err == nil {
								g.kind, err = gpu.Alloc[uint8](g.dev, c)
							}
						}
					}
				}
			}
		}
		if err != nil {
			for _, b := range []interface{ Free() error }{g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind} {
				_ = b.Free() // best effort (nil-safe): err says what failed
			}
			g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind = nil, nil, nil, nil, nil, nil, nil
			return fmt.Errorf("node arrays of %d nodes: %w", c, err)
		}
		g.capNodes = c
	}
	m := g.order
	for _, err := range []error{
		gpu.View[uint64](g.keys, 0, n*m).FillBytes(g.s, 0),
		gpu.View[uint64](g.slots, 0, n*m).FillBytes(g.s, 0),
		gpu.View[uint32](g.count, 0, n).FillBytes(g.s, 0),
		gpu.View[uint32](g.parent, 0, n).FillBytes(g.s, 0),
		gpu.View[uint32](g.next, 0, n).FillBytes(g.s, 0),
		gpu.View[uint32](g.prv, 0, n).FillBytes(g.s, 0),
		gpu.View[uint8](g.kind, 0, n).FillBytes(g.s, 0),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// snapshot copies the node arrays to a host store (segments of the CPU
// engine's layout), for Check and the tests. Cost: a transfer of the
// allocated nodes.
func (g *gpuTree) snapshot() (store, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := store{order: g.order}
	if g.nodes == 0 {
		return st, nil
	}
	if _, err := st.grow(g.nodes); err != nil {
		return st, err
	}
	m := g.order
	for i := range st.segs {
		sg := &st.segs[i]
		a := i * segNodes
		b := min(a+segNodes, g.nodes)
		if err := errors.Join(
			g.keys.Read(g.s, a*m, sg.keys[:(b-a)*m]), g.slots.Read(g.s, a*m, sg.slots[:(b-a)*m]),
			g.count.Read(g.s, a, sg.count[:b-a]), g.parent.Read(g.s, a, sg.parent[:b-a]),
			g.next.Read(g.s, a, sg.next[:b-a]), g.prv.Read(g.s, a, sg.prev[:b-a]),
			g.kind.Read(g.s, a, sg.kind[:b-a])); err != nil {
			return st, err
		}
	}
	return st, g.s.Synchronize()
}

// launch queues f over n items (nothing for n <= 0) with the package's
// launch configuration (grid, kernelBlock).
func (g *gpuTree) launch(f *gpu.Function, n int, args ...any) error {
	if n <= 0 {
		return nil
	}
	return f.Launch(g.s, grid(n), gpu.D1(kernelBlock), 0, args...)
}

// readWords reads element i of each buffer (as one synchronization).
func (g *gpuTree) readWords(bufs []*gpu.Buffer[uint64], at []int) ([]uint64, error) {
	out := make([]uint64, len(bufs))
	var err error
	for i, b := range bufs {
		err = errors.Join(err, b.Read(g.s, at[i], out[i:i+1]))
	}
	g.trace.Synced()
	return out, errors.Join(err, g.s.Synchronize())
}

// growCap makes the node arrays hold at least n nodes, keeping the
// contents of the nodes in use. On failure the arrays are unchanged.
// The headroom is an eighth, as for the pool's buffers (gpu.Pool) and
// reserve, not CuART's half (art's growCap): n is already an insert's
// loose bound (insertSorted counts each new leaf node again at every
// level above it), which leaves room past the nodes in use. Cost: when
// growing, an allocation of the new capacity (n + n/8, whole segments)
// and a device copy of the nodes in use.
func (g *gpuTree) growCap(n int) error {
	if n <= g.capNodes {
		return nil
	}
	if n > maxNodes {
		return fmt.Errorf("%d nodes: at most %d", n, maxNodes)
	}
	c := (n + n/8 + segMask) &^ segMask
	m := g.order
	var (
		keys, slots              *gpu.Buffer[uint64]
		count, parent, next, prv *gpu.Buffer[uint32]
		kind                     *gpu.Buffer[uint8]
		err                      error
	)
	if keys, err = gpu.Alloc[uint64](g.dev, c*m); err == nil {
		if slots, err = gpu.Alloc[uint64](g.dev, c*m); err == nil {
			if count, err = gpu.Alloc[uint32](g.dev, c); err == nil {
				if parent, err = gpu.Alloc[uint32](g.dev, c); err == nil {
					if next, err = gpu.Alloc[uint32](g.dev, c); err == nil {
						if prv, err = gpu.Alloc[uint32](g.dev, c); err == nil {
							kind, err = gpu.Alloc[uint8](g.dev, c)
						}
					}
				}
			}
		}
	}
	if err == nil && g.nodes > 0 {
		g.trace.Synced()
		u := g.nodes
		err = errors.Join(keys.CopyFrom(g.s, 0, g.keys, 0, u*m), slots.CopyFrom(g.s, 0, g.slots, 0, u*m),
			count.CopyFrom(g.s, 0, g.count, 0, u), parent.CopyFrom(g.s, 0, g.parent, 0, u),
			next.CopyFrom(g.s, 0, g.next, 0, u), prv.CopyFrom(g.s, 0, g.prv, 0, u),
			kind.CopyFrom(g.s, 0, g.kind, 0, u), g.s.Synchronize())
	}
	if err != nil {
		for _, b := range []interface{ Free() error }{keys, slots, count, parent, next, prv, kind} {
			_ = b.Free() // best effort (nil-safe): err says what failed
		}
		return fmt.Errorf("node arrays of %d nodes: %w", c, err)
	}
	nodes, height := g.nodes, g.height
	if err := g.freeNodes(); err != nil {
		return err
	}
	g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind = keys, slots, count, parent, next, prv, kind
	g.capNodes, g.nodes, g.height = c, nodes, height
	return nil
}

// allocNodes takes k new nodes after those in use, zeroed like the CPU
// engine's new segments, and returns the first id. The capacity must have
// been reserved (growCap). Cost: memsets of k nodes.
func (g *gpuTree) allocNodes(k int) (uint32, error) {
	first := g.nodes
	if first+k > g.capNodes {
		return 0, fmt.Errorf("btree: %d nodes past the reserved %d", first+k, g.capNodes)
	}
	if k == 0 {
		return uint32(first), nil
	}
	m := g.order
	if err := errors.Join(
		gpu.View[uint64](g.keys, 8*first*m, k*m).FillBytes(g.s, 0),
		gpu.View[uint64](g.slots, 8*first*m, k*m).FillBytes(g.s, 0),
		gpu.View[uint32](g.count, 4*first, k).FillBytes(g.s, 0),
		gpu.View[uint32](g.parent, 4*first, k).FillBytes(g.s, 0),
		gpu.View[uint32](g.next, 4*first, k).FillBytes(g.s, 0),
		gpu.View[uint32](g.prv, 4*first, k).FillBytes(g.s, 0),
		gpu.View[uint8](g.kind, first, k).FillBytes(g.s, 0)); err != nil {
		return 0, err
	}
	g.nodes += k
	return uint32(first), nil
}

// boolInt is 1 for true, 0 for false (a kernel's int flag).
func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func (g *gpuTree) state() treeState { return g.st }

func (g *gpuTree) build(keys, values []uint64) (engine.Timings, error) {
	b, tm, err := g.buildBatch(keys, values)
	if err != nil {
		g.st = treeState{root: nilNode} // the node arrays are not a tree any more
		return tm, err
	}
	g.st = treeState{root: b.root, n: b.n, leaves: b.leaves}
	return tm, nil
}

// insert and remove keep the bookkeeping when they fail before the tree
// changed (out of memory fails there).

func (g *gpuTree) insert(keys, values []uint64) (engine.Timings, error) {
	var tm engine.Timings
	var err error
	g.st, tm, err = g.insertBatch(g.st, keys, values, false)
	return tm, err
}

func (g *gpuTree) remove(keys []uint64) (engine.Timings, error) {
	var tm engine.Timings
	var err error
	g.st, tm, err = g.deleteBatch(g.st, keys, g.fill)
	return tm, err
}

func (g *gpuTree) lookup(keys, values []uint64, found []bool) (engine.Timings, error) {
	fb := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(found))), len(found)) // the kernel writes 0 or 1
	return g.lookupBatch(g.st.root, keys, values, fb, false)
}

// lookupStaged is lookup from and into a pinned Staging's arrays.
func (g *gpuTree) lookupStaged(keys, values []uint64, found []uint8) (engine.Timings, error) {
	return g.lookupBatch(g.st.root, keys, values, found, true)
}

// rangeOf is ranges of one query.
func (g *gpuTree) rangeOf(lo, hi uint64, limit int) (keys, values []uint64, err error) {
	r, _, err := g.rangesBatch(nil, g.st.root, []uint64{lo}, []uint64{hi}, limit, false, false)
	if err != nil || len(r.Keys) == 0 {
		return nil, nil, err
	}
	return r.Keys, r.Values, nil
}

func (g *gpuTree) ranges(into *Result, los, his []uint64, limit int) (*Result, engine.Timings, error) {
	return g.rangesBatch(into, g.st.root, los, his, limit, true, false)
}

// rangesDesc is ranges in descending key order: the same kernels, chunks
// and pipeline, walking the leaf chain's prev links from each query's
// upper bound (ranges.cu).
func (g *gpuTree) rangesDesc(into *Result, los, his []uint64, limit int) (*Result, engine.Timings, error) {
	return g.rangesBatch(into, g.st.root, los, his, limit, true, true)
}
