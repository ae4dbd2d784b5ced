package btree

import (
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// cpuTree is the CPU engine: the node arrays in host memory (store.go) and
// the phases on goroutines (build.go, insert.go, delete.go, propagate.go,
// get.go, ranges.go). Batches that change it are serialized by the Tree;
// lookups and ranges only read it and run concurrently.
type cpuTree struct {
	opt    resolved
	eng    *prim.Engine // the CPU primitives: sort, run-length encoding, scans
	st     store
	root   uint32 // nilNode when empty
	n      int    // keys
	leaves int    // live leaves
	freed  int    // allocated nodes of kind free
}

// newCPUTree returns an empty CPU engine. Cost: O(1).
func newCPUTree(r resolved) *cpuTree {
	return &cpuTree{opt: r, eng: prim.NewCPU(r.workers), st: store{order: r.order}, root: nilNode}
}

func (t *cpuTree) state() treeState {
	return treeState{root: t.root, n: t.n, leaves: t.leaves, freed: t.freed}
}

// snapshot returns the engine's own node arrays (not a copy): callers only
// read them.
func (t *cpuTree) snapshot() (store, error) { return t.st, nil }

func (t *cpuTree) close() error {
	t.clear()
	return t.eng.Close()
}

// startHostClock starts the host clock of a CPU engine batch and marks
// its start (a CPU batch has no upload). Cost: two time.Now.
func startHostClock() *engine.Clock {
	c := &engine.Clock{}
	c.Start()
	c.Mark(nil, engine.MarkStart)
	return c
}

// finishHostClock marks the end of a CPU engine batch's work and returns
// its timings: Sort from the start to the MarkSorted mark, if any, Work
// from there to the end. Nothing is downloaded, so MarkDone stays unmarked
// and Download is 0 (Total runs to now). Cost: O(1).
func finishHostClock(c *engine.Clock, op string, items int) engine.Timings {
	c.Mark(nil, engine.MarkWorked)
	return c.Timings(op, items)
}

// clear makes the tree empty. Cost: O(1).
func (t *cpuTree) clear() {
	t.st.reset()
	t.root, t.n, t.leaves, t.freed = nilNode, 0, 0, 0
}

// free marks node id free. Cost: O(1).
func (t *cpuTree) free(id uint32) {
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
func (t *cpuTree) findLeaf(k uint64) uint32 {
	id := t.root
	for t.st.kind(id) == kindInternal {
		id = t.child(id, k)
	}
	return id
}

// child returns the child of internal node id whose subtree holds (or
// would hold) k: the first whose max key is at least k, else the last.
func (t *cpuTree) child(id uint32, k uint64) uint32 {
	s := &t.st
	c := s.count(id)
	j := lowerBound(s.keys(id)[:c], k)
	if j == c {
		j = c - 1
	}
	return uint32(s.slots(id)[j])
}

// sortBatch returns a sorted copy of keys (and of values, when values is
// not nil) with one entry per key: the last occurrence in the batch. Cost:
// a stable radix sort of the batch plus one pass.
func (t *cpuTree) sortBatch(keys, values []uint64) ([]uint64, []uint64, error) {
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
func (t *cpuTree) groupByLeaf(keys []uint64) ([]uint32, []uint32, error) {
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
func (t *cpuTree) runs(ids []uint32) ([]uint32, []uint32, error) {
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
