package btree

import (
	"fmt"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Tree is a B+ tree of uint64 keys to uint64 values on the CPU engine or
// the GPU engine (Options.Device, Options.GPU). See the package
// documentation for the layout and the phases. It is safe for concurrent
// use: batches that change it run one at a time, lookups and ranges
// concurrently with each other. It implements engine.Reporter through its
// embedded engine.Facade (Backend, Reason, LastBatch, Close); after Close
// every call returns an error matching engine.ErrClosed.
//
// LastBatch is the time breakdown of the most recent batch that changed or
// read the tree (Build, Insert, Delete, Lookup, Get or Ranges). On the GPU engine
// the phases are measured with CUDA events on the tree's stream (device
// time); on the CPU engine with host timers, and Upload and Download are
// 0. Where the GPU engine overlaps phases, the overlapped time goes to one
// of them: a large Build or Insert counts only the keys' upload in Upload
// and the values' upload (overlapping the sort) in Sort; a large Lookup
// (pipelined in chunks) reports its whole device span as Work.
type Tree struct {
	engine.Facade[treeEngine]
	opt   resolved
	e     treeEngine // the facade's engine; used under the facade's lock
	chunk int        // keys per chunk of the Context calls (0: engine.ContextChunk)

	fresh func() (treeEngine, error) // a new empty engine on the tree's placement
}

var _ engine.Reporter = (*Tree)(nil)

// Open returns an empty Tree on the engine that o.GPU or o.Device selects
// (engine.Place: auto, cpu, gpu or gpu:N; "" means WARPKV_DEVICE, else
// auto). Close it to free its memory and, when the tree opened it, the
// device. Cost: O(1) on the CPU engine; on the GPU engine a stream and the
// compilation of the kernels (cached on disk). Storage grows with the
// batches.
func Open(o Options) (*Tree, error) {
	r, err := o.resolve()
	if err != nil {
		return nil, err
	}
	t := &Tree{opt: r}
	t.e, t.fresh, err = engine.OpenFresh(&t.Facade, engine.Spec[treeEngine]{
		Name: "btree", Device: o.Device, GPU: o.GPU,
		Free: func(e treeEngine) error { return e.close() },
	}, func(p engine.Placement) (treeEngine, error) {
		if p.Backend != gpu.BackendGPU {
			return newCPUTree(r), nil
		}
		g, err := newGPUTree(r, p.Device)
		if err != nil {
			return nil, fmt.Errorf("btree: open on %s: %w", p.Device, err)
		}
		return g, nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Len returns the number of keys (0 after Close). Cost: O(1).
func (t *Tree) Len() int {
	if _, err := engine.RLock(&t.Facade, "len"); err != nil {
		return 0
	}
	defer engine.RUnlock(&t.Facade)
	return t.e.state().n
}

// Order returns the node order. Cost: O(1).
func (t *Tree) Order() int { return t.opt.order }

// idle records the timings of a batch with nothing to do. Cost: O(1).
func (t *Tree) idle(op string, items int, t0 time.Time) {
	d := time.Since(t0)
	engine.Record(&t.Facade, engine.Timings{Op: op, Items: items, Work: d, Total: d})
}

// Build replaces the tree's contents with the given pairs. keys need not be
// sorted; for a key given more than once the last occurrence wins. Cost: a
// radix sort of the batch, then O(n) work spread over the workers: leaves
// filled to the fill factor by a closed formula, upper levels built
// bottom-up from the max keys. On the GPU engine the same steps run on the
// device (sort, compaction of the last occurrences, one thread per key for
// the leaves and per child for each upper level) and give the same node
// arrays.
func (t *Tree) Build(keys, values []uint64) error {
	if len(keys) != len(values) {
		return fmt.Errorf("btree: build: %d keys but %d values", len(keys), len(values))
	}
	if _, err := engine.Lock(&t.Facade, "build"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	tm, err := t.e.build(keys, values)
	if err != nil {
		return fmt.Errorf("btree: build: %w", err)
	}
	engine.Record(&t.Facade, tm)
	return nil
}

// Insert upserts the pairs: a key already in the tree gets the new value,
// and for a key given more than once the last occurrence wins. Phases: sort
// the batch, find each key's leaf, group by leaf, merge each touched leaf
// with its keys (counted in a first pass, written in a second), split
// overflowing leaves into contiguous new leaves, propagate max keys and new
// children level by level. Cost: a radix sort of the batch, O(batch *
// height * log order) for the searches, O(touched leaves * order + batch)
// for the merges, spread over the workers (the keys of one leaf are merged
// by one goroutine). On the GPU engine the same phases run on the device
// (see the package documentation) and give the same node arrays; running
// out of device memory returns an error matching gpu.ErrOutOfMemory and
// leaves the tree as it was.
func (t *Tree) Insert(keys, values []uint64) error {
	if len(keys) != len(values) {
		return fmt.Errorf("btree: insert: %d keys but %d values", len(keys), len(values))
	}
	return t.insertPairs(keys, values, false)
}

// insertPairs is Insert and InsertStaged after their checks: the batch on
// the tree's engine under the tree's lock, recorded in LastBatch; pinned
// says that keys and values are a Staging's pinned arrays, which the GPU
// engine reads by DMA.
func (t *Tree) insertPairs(keys, values []uint64, pinned bool) error {
	if _, err := engine.Lock(&t.Facade, "insert"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	if len(keys) == 0 {
		t.idle("insert", 0, time.Now())
		return nil
	}
	var tm engine.Timings
	var err error
	if g, ok := t.e.(*gpuTree); ok && pinned {
		g.st, tm, err = g.insertBatch(g.st, keys, values, true)
	} else {
		tm, err = t.e.insert(keys, values)
	}
	if err != nil {
		return fmt.Errorf("btree: insert: %w", err)
	}
	engine.Record(&t.Facade, tm)
	return nil
}

// Delete removes the given keys (keys not in the tree are ignored) and
// returns how many distinct keys it removed. Phases:
// sort the keys, find each key's leaf, group by leaf, drop each touched
// leaf's keys in place (one goroutine per leaf), free and unlink the leaves
// left empty, propagate max keys and freed children level by level, shorten
// a root with one child. Non-empty nodes are not merged; the tree is
// rebuilt when it falls under the fill threshold (see the package
// documentation). Cost: a radix sort of the batch, O(batch * height * log
// order) for the searches, O(touched leaves * order) for the leaves, plus
// O(n) when it rebuilds. On the GPU engine the same phases run on the
// device and give the same node arrays (the rebuild is a device build over
// the leaves' pairs); running out of device memory returns an error
// matching gpu.ErrOutOfMemory and leaves the tree as it was.
func (t *Tree) Delete(keys []uint64) (int, error) {
	if _, err := engine.Lock(&t.Facade, "delete"); err != nil {
		return 0, err
	}
	defer engine.Unlock(&t.Facade)
	n := t.e.state().n
	if len(keys) == 0 || t.e.state().root == nilNode {
		t.idle("delete", len(keys), time.Now())
		return 0, nil
	}
	tm, err := t.e.remove(keys)
	if err != nil {
		return 0, fmt.Errorf("btree: delete: %w", err)
	}
	engine.Record(&t.Facade, tm)
	return n - t.e.state().n, nil
}

// Get looks up every key: values[i] is the value of keys[i] and found[i]
// whether it is in the tree (values[i] is 0 when not). Cost: O(len(keys) *
// height * log order) spread over the workers, one search per key; on the
// GPU engine one thread per key, plus a transfer each way. A device
// failure (or out of device memory) is returned as an error.
func (t *Tree) Get(keys []uint64) (values []uint64, found []bool, err error) {
	values = make([]uint64, len(keys))
	found = make([]bool, len(keys))
	if err := t.Lookup(keys, values, found); err != nil {
		return nil, nil, err
	}
	return values, found, nil
}

// Lookup is Get into caller-provided slices of len(keys) (their previous
// contents are overwritten).
func (t *Tree) Lookup(keys, values []uint64, found []bool) error {
	if len(values) != len(keys) || len(found) != len(keys) {
		return fmt.Errorf("btree: lookup: %d keys, %d values, %d found flags", len(keys), len(values), len(found))
	}
	t0 := time.Now()
	if _, err := engine.RLock(&t.Facade, "lookup"); err != nil {
		return err
	}
	defer engine.RUnlock(&t.Facade)
	if t.e.state().root == nilNode || len(keys) == 0 {
		clear(values)
		clear(found)
		t.idle("lookup", len(keys), t0)
		return nil
	}
	tm, err := t.e.lookup(keys, values, found)
	if err != nil {
		return fmt.Errorf("btree: lookup: %w", err)
	}
	engine.Record(&t.Facade, tm)
	return nil
}

// inclusive converts the half-open range [lo, hi) to the engines'
// inclusive bounds [lo, hi-1]; an empty range becomes lo > hi, which the
// engines answer with nothing.
func inclusive(lo, hi uint64) (uint64, uint64) {
	if hi == 0 {
		return 1, 0
	}
	return lo, hi - 1
}

// Range returns the pairs with lo <= key < hi (half-open: Range(1, 3, 0)
// holds 1 and 2) in key order, at most limit of them (limit <= 0: no
// limit); nothing when lo >= hi. The key math.MaxUint64 lies beyond every
// half-open range: All and Get reach it. Cost: O(height * log order +
// result + leaves walked); on the GPU engine it is Ranges of one query.
func (t *Tree) Range(lo, hi uint64, limit int) (keys, values []uint64, err error) {
	if _, err := engine.RLock(&t.Facade, "range"); err != nil {
		return nil, nil, err
	}
	defer engine.RUnlock(&t.Facade)
	if t.e.state().root == nilNode || lo >= hi {
		return nil, nil, nil
	}
	l, h := inclusive(lo, hi)
	keys, values, err = t.e.rangeOf(l, h, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("btree: range: %w", err)
	}
	return keys, values, nil
}

// Ranges answers many half-open range queries [los[i], his[i]) in two
// passes: count each query's pairs (at most limit each, limit <= 0: no
// limit), exclusive scan of the
// counts, then write each query's pairs at its offset. Query i's pairs are
// keys[offsets[i]:offsets[i+1]] and values[offsets[i]:offsets[i+1]].
// Cost: twice that of the queries' Range calls, spread over the workers,
// plus a scan. On the GPU engine the count pass is a kernel of one thread
// per query that descends once and keeps where the pairs start, the scan
// is prim's, and the write pass a kernel of one warp per query copying
// from there (no second descent); LastBatch then holds the call's phases.
// RangesInto answers into a reused (or pinned) Result instead; RangesDesc
// answers in descending key order.
func (t *Tree) Ranges(los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error) {
	r, err := t.RangesInto(nil, los, his, limit)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.Keys, r.Values, r.Offsets, nil
}

// RangesInto is Ranges answering into r (nil: a new Result), which it
// returns: r's arrays are reused when they have the room, so a caller
// that runs batch after batch allocates the answers' memory once; a
// Result from NewResult also spares the GPU engine the copy out of its
// transfer buffers. Cost: as Ranges, less the allocation of the arrays
// that do not grow.
func (t *Tree) RangesInto(r *Result, los, his []uint64, limit int) (*Result, error) {
	return t.rangesInto("ranges", r, los, his, limit, false)
}

// Check verifies the tree's invariants and returns the first violation:
// every reachable node is live with 1 to Order entries (an internal root at
// least 2), keys strictly increase within a node and across the leaves,
// every internal key is the max key of its child, parent links match,
// every leaf is at the same depth, the leaf chain (next and prev) visits
// the leaves in key order, the key, leaf and node counts match. Cost:
// O(nodes * order), one goroutine; on the GPU engine plus a copy of the
// node arrays to the host.
func (t *Tree) Check() error {
	if _, err := engine.RLock(&t.Facade, "check"); err != nil {
		return err
	}
	defer engine.RUnlock(&t.Facade)
	st, err := t.e.snapshot()
	if err != nil {
		return fmt.Errorf("btree: check: copy of the node arrays: %w", err)
	}
	s := t.e.state()
	h := &cpuTree{opt: t.opt, st: st, root: s.root, n: s.n, leaves: s.leaves, freed: s.freed}
	return h.check()
}
