package btree

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// ErrClosed is returned by the batches of a closed Tree.
var ErrClosed = errors.New("btree: tree is closed")

// Tree is a B+ tree of uint64 keys to uint64 values on the CPU engine or
// the GPU engine (Options.Device, Options.GPU). See the package
// documentation for the layout and the phases. It implements
// engine.Reporter.
type Tree struct {
	mu     sync.RWMutex
	opt    resolved
	place  engine.Placement
	e      treeEngine
	closed bool
	last   engine.Last // lookups run concurrently
}

var _ engine.Reporter = (*Tree)(nil)

// New returns an empty Tree on the engine that o.GPU or o.Device selects
// (engine.Place: "" means WARPKV_DEVICE, else auto). Cost: O(1) on the CPU
// engine; on the GPU engine a stream and the compilation of the kernels
// (cached on disk). Storage grows with the batches.
func New(o Options) (*Tree, error) {
	r, err := o.resolve()
	if err != nil {
		return nil, err
	}
	p, err := engine.Place("btree", o.Device, o.GPU)
	if err != nil {
		return nil, err
	}
	t := &Tree{opt: r, place: p}
	if p.Backend != gpu.BackendGPU {
		t.e = newCPUTree(r)
		return t, nil
	}
	g, err := newGPUTree(r, p.Device)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("btree: new on %s: %w", p.Device, err), p.Release())
	}
	t.e = g
	return t, nil
}

// Backend says which engine the tree runs on. Cost: O(1).
func (t *Tree) Backend() gpu.Backend { return t.place.Backend }

// Reason is a sentence saying which engine was chosen and why. Cost: O(1).
func (t *Tree) Reason() string { return t.place.Reason }

// LastBatch returns the time breakdown of the most recent batch that
// changed or read the tree (Build, Insert, Delete, Lookup or Get). On the
// GPU engine the phases are measured with CUDA events on the tree's stream
// (device time); on the CPU engine with host timers, and Upload and
// Download are 0. Where the GPU engine overlaps phases, the overlapped time
// goes to one of them: a large Build or Insert counts only the keys'
// upload in Upload and the values' upload (overlapping the sort) in Sort;
// a large Lookup (pipelined in chunks) reports its whole device span as
// Work. Cost: O(1).
func (t *Tree) LastBatch() engine.Timings { return t.last.Get() }

// Len returns the number of keys. Cost: O(1).
func (t *Tree) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.e.state().n
}

// Order returns the node order. Cost: O(1).
func (t *Tree) Order() int { return t.opt.order }

// Close releases the tree's storage, and the device if the tree opened it;
// later batches return ErrClosed and lookups find nothing. Closing twice is
// a no-op. Cost: O(1) on the CPU engine; freeing the device memory on the
// GPU engine.
func (t *Tree) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if err := errors.Join(t.e.close(), t.place.Release()); err != nil {
		return fmt.Errorf("btree: close: %w", err)
	}
	t.e = newCPUTree(t.opt) // empty: reads of a closed tree find nothing
	return nil
}

// idle records the timings of a batch with nothing to do. Cost: O(1).
func (t *Tree) idle(op string, items int, t0 time.Time) {
	d := time.Since(t0)
	t.last.Set(engine.Timings{Op: op, Items: items, Work: d, Total: d})
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
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	tm, err := t.e.build(keys, values)
	if err != nil {
		return fmt.Errorf("btree: build: %w", err)
	}
	t.last.Set(tm)
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
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if len(keys) == 0 {
		t.idle("insert", 0, time.Now())
		return nil
	}
	tm, err := t.e.insert(keys, values)
	if err != nil {
		return fmt.Errorf("btree: insert: %w", err)
	}
	t.last.Set(tm)
	return nil
}

// Delete removes the given keys; keys not in the tree are ignored. Phases:
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
func (t *Tree) Delete(keys []uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if len(keys) == 0 || t.e.state().root == nilNode {
		t.idle("delete", len(keys), time.Now())
		return nil
	}
	tm, err := t.e.remove(keys)
	if err != nil {
		return fmt.Errorf("btree: delete: %w", err)
	}
	t.last.Set(tm)
	return nil
}

// Get looks up every key: values[i] is the value of keys[i] and found[i]
// whether it is in the tree (values[i] is 0 when not). On a closed tree
// nothing is found. Cost: O(len(keys) * height * log order) spread over the
// workers, one search per key; on the GPU engine one thread per key, plus
// a transfer each way. Get panics if the GPU engine fails (a device error,
// or out of device memory); Lookup returns that error instead.
func (t *Tree) Get(keys []uint64) (values []uint64, found []bool) {
	values = make([]uint64, len(keys))
	found = make([]bool, len(keys))
	if err := t.Lookup(keys, values, found); err != nil {
		panic(err)
	}
	return values, found
}

// Lookup is Get into caller-provided slices of len(keys) (their previous
// contents are overwritten), returning the GPU engine's errors. It fails
// only on a length mismatch or on the GPU engine.
func (t *Tree) Lookup(keys, values []uint64, found []bool) error {
	if len(values) != len(keys) || len(found) != len(keys) {
		return fmt.Errorf("btree: lookup: %d keys, %d values, %d found flags", len(keys), len(values), len(found))
	}
	t0 := time.Now()
	t.mu.RLock()
	defer t.mu.RUnlock()
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
	t.last.Set(tm)
	return nil
}

// Range returns the pairs with lo <= key <= hi in key order, at most limit
// of them (limit <= 0: no limit). On a closed tree or when lo > hi it
// returns nothing. Cost: O(height * log order + result + leaves walked).
// On the GPU engine it is Ranges of one query, and panics if the device
// fails; use Ranges to get the error.
func (t *Tree) Range(lo, hi uint64, limit int) (keys, values []uint64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.e.state().root == nilNode || lo > hi {
		return nil, nil
	}
	keys, values, err := t.e.rangeOf(lo, hi, limit)
	if err != nil {
		panic(fmt.Errorf("btree: range: %w", err))
	}
	return keys, values
}

// Ranges answers many range queries in two passes: count each query's
// pairs (at most limit each, limit <= 0: no limit), exclusive scan of the
// counts, then write each query's pairs at its offset. Query i's pairs are
// keys[offsets[i]:offsets[i+1]] and values[offsets[i]:offsets[i+1]].
// Cost: twice that of the queries' Range calls, spread over the workers,
// plus a scan. On the GPU engine the passes are kernels of one thread per
// query and the scan is prim's.
func (t *Tree) Ranges(los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error) {
	if len(los) != len(his) {
		return nil, nil, nil, fmt.Errorf("btree: ranges: %d lows but %d highs", len(los), len(his))
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.e.state().root == nilNode || len(los) == 0 {
		return []uint64{}, []uint64{}, make([]int, len(los)+1), nil
	}
	keys, values, offsets, err = t.e.ranges(los, his, limit)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("btree: ranges: %w", err)
	}
	return keys, values, offsets, nil
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
	t.mu.RLock()
	defer t.mu.RUnlock()
	st, err := t.e.snapshot()
	if err != nil {
		return fmt.Errorf("btree: check: copy of the node arrays: %w", err)
	}
	s := t.e.state()
	h := &cpuTree{opt: t.opt, st: st, root: s.root, n: s.n, leaves: s.leaves, freed: s.freed}
	return h.check()
}
