package btree

import (
	"errors"
	"fmt"
	"sync"

	"warpkv/internal/par"

	"warpkv/gpu"
	"warpkv/prim"
)

// ErrClosed is returned by the batches of a closed Tree.
var ErrClosed = errors.New("btree: tree is closed")

// Tree is a B+ tree of uint64 keys to uint64 values on the CPU engine or
// the GPU engine (Options.Device). See the package documentation for the
// layout and the phases.
type Tree struct {
	mu     sync.RWMutex
	opt    resolved
	eng    *prim.Engine
	g      *gpuTree // the GPU engine; nil on the CPU engine, where st holds the nodes
	reason string
	st     store
	root   uint32 // nilNode when empty
	n      int    // keys
	leaves int    // live leaves
	freed  int    // allocated nodes of kind free
	closed bool

	lastMu sync.Mutex // guards last (lookups run concurrently)
	last   BatchTimes
}

// New returns an empty Tree on the engine that o.GPU or o.Device selects.
// Cost: O(1) on the CPU engine; on the GPU engine a stream and the
// compilation of the kernels (cached on disk). Storage grows with the
// batches.
func New(o Options) (*Tree, error) {
	r, err := o.resolve()
	if err != nil {
		return nil, err
	}
	t := &Tree{opt: r, eng: prim.NewCPU(r.workers), st: store{order: r.order}, root: nilNode}
	if o.GPU != nil {
		if t.g, err = newGPUTree(r, o.GPU, false); err != nil {
			return nil, fmt.Errorf("btree: new on %s: %w", o.GPU, err)
		}
		t.reason = "gpu engine on " + o.GPU.String() + ": given"
		return t, nil
	}
	dev := o.Device
	if dev == "" {
		dev = "cpu"
	}
	c, err := gpu.Choose(dev)
	if err != nil {
		return nil, fmt.Errorf("btree: %w", err)
	}
	t.reason = c.Reason
	if c.Backend == gpu.BackendGPU {
		if t.g, err = newGPUTree(r, c.Device, true); err != nil {
			c.Device.Close()
			return nil, fmt.Errorf("btree: new on %s: %w", c.Device, err)
		}
	}
	return t, nil
}

// Backend says which engine the tree runs on.
func (t *Tree) Backend() gpu.Backend {
	if t.g != nil {
		return gpu.BackendGPU
	}
	return gpu.BackendCPU
}

// Reason is a sentence saying which engine was chosen and why.
func (t *Tree) Reason() string { return t.reason }

// Len returns the number of keys. Cost: O(1).
func (t *Tree) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.n
}

// Order returns the node order. Cost: O(1).
func (t *Tree) Order() int { return t.opt.order }

// Close releases the tree's storage; later batches return ErrClosed and
// lookups find nothing. Closing twice is a no-op. Cost: O(1).
func (t *Tree) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	t.clear()
	if t.g != nil {
		if err := t.g.close(); err != nil {
			return fmt.Errorf("btree: close: %w", err)
		}
	}
	if err := t.eng.Close(); err != nil {
		return fmt.Errorf("btree: close: %w", err)
	}
	return nil
}

// clear makes the tree empty. Cost: O(1).
func (t *Tree) clear() {
	t.st.reset()
	t.root, t.n, t.leaves, t.freed = nilNode, 0, 0, 0
}

// free marks node id free. Cost: O(1).
func (t *Tree) free(id uint32) {
	t.st.setKind(id, kindFree)
	t.st.setCount(id, 0)
}

// lowerBound returns the first index of keys holding a key >= k, or
// len(keys). Cost: O(log len(keys)).
func lowerBound(keys []uint64, k uint64) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if keys[mid] < k {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// findLeaf returns the leaf whose key range holds k: at each internal node
// the first child whose max key is >= k, or the last child when k exceeds
// every key (the right spine). The tree must not be empty. Cost: O(height *
// log order).
func (t *Tree) findLeaf(k uint64) uint32 {
	s := &t.st
	id := t.root
	for s.kind(id) == kindInternal {
		c := s.count(id)
		j := lowerBound(s.keys(id)[:c], k)
		if j == c {
			j = c - 1
		}
		id = uint32(s.slots(id)[j])
	}
	return id
}

// sortBatch returns a sorted copy of keys (and of values, when values is
// not nil) with one entry per key: the last occurrence in the batch. Cost:
// a stable radix sort of the batch plus one pass.
func (t *Tree) sortBatch(keys, values []uint64) ([]uint64, []uint64, error) {
	k := append([]uint64(nil), keys...)
	var v []uint64
	if values != nil {
		v = append([]uint64(nil), values...)
		if err := prim.SortPairs(t.eng, k, v); err != nil {
			return nil, nil, fmt.Errorf("btree: sort batch: %w", err)
		}
	} else if err := prim.SortKeys(t.eng, k); err != nil {
		return nil, nil, fmt.Errorf("btree: sort batch: %w", err)
	}
	w := 0
	for i := range k {
		if i+1 < len(k) && k[i+1] == k[i] {
			continue // a later occurrence wins
		}
		k[w] = k[i]
		if v != nil {
			v[w] = v[i]
		}
		w++
	}
	if v != nil {
		v = v[:w]
	}
	return k[:w], v, nil
}

// groupByLeaf finds the leaf of every sorted batch key and groups the keys
// by leaf: it returns the touched leaves in key order and the start of each
// one's keys in the batch (len(leaves)+1 offsets). Cost: a parallel search
// per key, a run-length encoding and a scan.
func (t *Tree) groupByLeaf(keys []uint64) ([]uint32, []uint32, error) {
	leafOf := make([]uint32, len(keys))
	par.For(len(keys), keyGrain, t.opt.workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			leafOf[i] = t.findLeaf(keys[i])
		}
	})
	return t.runs(leafOf)
}

// runs run-length encodes ids (equal ids are consecutive) and returns the
// distinct ids and the start of each run (one more offset than ids). Cost:
// one run-length encoding and one scan.
func (t *Tree) runs(ids []uint32) ([]uint32, []uint32, error) {
	uniq := make([]uint32, len(ids))
	starts := make([]uint32, len(ids)+1)
	r, err := prim.RunLengthEncode(t.eng, ids, uniq, starts)
	if err != nil {
		return nil, nil, fmt.Errorf("btree: group: %w", err)
	}
	starts[r] = 0
	if err := prim.ScanExclusive(t.eng, starts[:r+1], starts[:r+1]); err != nil {
		return nil, nil, fmt.Errorf("btree: group: %w", err)
	}
	return uniq[:r], starts[:r+1], nil
}
