package mpt

import (
	"fmt"
	"sync"
	"time"

	"github.com/warpkv/warpkv/internal/par"
)

// The parallel CPU engine (Options.Engine = EngineParallel): the CPU port
// of the paper's PhaseNU batch update and a parallel hasher. It works on
// the sequential engine's nodes with the sequential engine's insert and
// delete, so both engines build the same canonical trie.
//
// Update: the keys' nibble paths are computed on goroutines (with their
// Keccak-256 in secure mode); then the batch is split by nibble, level by
// level, with a stable counting sort (an MSD radix sort that keeps batch
// order within a key, so the last operation on a key still wins). The
// node at each level is expanded into its 17 slots (a branch's children;
// a short node becomes the one slot its path starts with), each slot's
// sub-batch is applied to it on its own goroutine (recursively while the
// sub-batch is larger than the grain, then one operation at a time), and
// the level is compressed back into canonical form (no branch with fewer
// than two entries, short nodes merged) exactly as go-ethereum's delete
// collapses a branch. The slots are disjoint subtrees, so no locks.
//
// Hash: fork-join over the dirty children of the root's branch and of the
// branches below it (see forkHasher), each goroutine with its own hasher;
// every node is still encoded and hashed exactly once, bottom-up, so the
// references are the sequential hasher's byte for byte.

// minGrain is the smallest sub-batch the parallel update still splits;
// smaller ones are applied one operation at a time.
const minGrain = 32

// minChunk is the fewest keys a goroutine takes in the parallel path
// computation, lookups and proofs.
const minChunk = 256

// op is one operation of a batch on the parallel engine: a nibble path
// with terminator and the value to store, nil to delete.
type op struct {
	path  []byte
	value valueNode
}

// updater applies one batch on the parallel engine.
type updater struct {
	t     *cpuTrie
	sem   chan struct{} // a token per goroutine beyond the caller's
	grain int           // sub-batches of at most grain operations apply sequentially
}

// parallelUpdate applies a batch of equal-length keys and values (an
// empty value deletes) on the parallel engine.
func (t *cpuTrie) parallelUpdate(keys, values [][]byte) {
	if len(keys) == 0 {
		return
	}
	ops := make([]op, len(keys))
	t.forEach(len(keys), func(h *hasher, lo, hi int) {
		for i := lo; i < hi; i++ {
			if t.secure {
				sum := h.sum(keys[i])
				ops[i].path = keyToHex(sum[:])
			} else {
				ops[i].path = keyToHex(keys[i])
			}
			if len(values[i]) > 0 {
				ops[i].value = append(valueNode(nil), values[i]...)
			}
		}
	})
	u := &updater{t: t, sem: make(chan struct{}, t.workers-1), grain: t.grain}
	if u.grain == 0 {
		u.grain = max(minGrain, len(ops)/(16*t.workers))
	}
	t.root, _ = u.apply(t.root, ops, make([]op, len(ops)), 0)
}

// apply applies ops, whose paths share their first off nibbles, to n, the
// subtree at that depth, and returns the new subtree and whether anything
// changed. scratch has ops' length and is overwritten.
func (u *updater) apply(n node, ops, scratch []op, off int) (node, bool) {
	if len(ops) <= u.grain || len(ops[0].path) == off {
		// Small, or every path ends here (one key): in batch order.
		changed := false
		for _, o := range ops {
			var c bool
			if o.value == nil {
				n, c = u.t.delete(n, o.path[off:])
			} else {
				n, c = u.t.insert(n, o.path[off:], o.value)
			}
			changed = changed || c
		}
		return n, changed
	}
	// Stable counting sort by the nibble at off into scratch.
	var start [18]int
	for _, o := range ops {
		start[o.path[off]+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	next := start
	for _, o := range ops {
		scratch[next[o.path[off]]] = o
		next[o.path[off]]++
	}
	slots := expand(n)
	var changed [17]bool
	var wg sync.WaitGroup
	for i := range slots {
		lo, hi := start[i], start[i+1]
		if lo == hi {
			continue
		}
		run := func() { slots[i], changed[i] = u.apply(slots[i], scratch[lo:hi], ops[lo:hi], off+1) }
		if hi-lo <= u.grain/4 {
			run() // not worth a goroutine
			continue
		}
		select {
		case u.sem <- struct{}{}:
			wg.Add(1)
			go func() {
				defer func() { <-u.sem; wg.Done() }()
				run()
			}()
		default:
			run()
		}
	}
	wg.Wait()
	for _, c := range changed {
		if c {
			return compress(n, slots), true
		}
	}
	return n, false
}

// expand returns the 17 slots of the subtree n as a branch would hold
// them: a branch's children, or for a short node its remainder in the
// slot of its first nibble. n is not a value (paths do not end above it).
func expand(n node) [17]node {
	var slots [17]node
	switch n := n.(type) {
	case nil:
	case *fullNode:
		slots = n.children
	case *shortNode:
		slots[n.key[0]] = attach(n.key[1:], n.val)
	default:
		panic(fmt.Sprintf("mpt: parallel update: expanding %T", n))
	}
	return slots
}

// compress returns the canonical subtree holding slots: nothing, a short
// node (a lone slot merges with a short node below it, as go-ethereum's
// delete does), or a branch, reusing old when it is a branch. The result
// is dirty.
func compress(old node, slots [17]node) node {
	count, pos := 0, 0
	for i, c := range slots {
		if c != nil {
			count, pos = count+1, i
		}
	}
	switch count {
	case 0:
		return nil
	case 1:
		if s, ok := slots[pos].(*shortNode); ok && pos != terminator {
			return &shortNode{key: concat([]byte{byte(pos)}, s.key), val: s.val}
		}
		return &shortNode{key: []byte{byte(pos)}, val: slots[pos]}
	}
	if f, ok := old.(*fullNode); ok {
		f.children = slots
		f.cache.clear()
		return f
	}
	return &fullNode{children: slots}
}

// forEach calls fn over [0, n) split into near-equal contiguous parts of
// at least minChunk keys, on up to Workers goroutines on the parallel
// engine (par.Ranges; part i with worker hasher i), else once on the
// caller's goroutine with the trie's hasher.
func (t *cpuTrie) forEach(n int, fn func(h *hasher, lo, hi int)) {
	parts := 1
	if t.workers > 1 {
		parts = par.Parts(n, minChunk, t.workers)
	}
	if parts == 1 {
		fn(t.hasher, 0, n)
		return
	}
	t.ensurePool(parts)
	par.Ranges(n, parts, func(i, lo, hi int) { fn(t.pool[i], lo, hi) })
}

// ensurePool makes sure the trie holds at least w worker hashers.
func (t *cpuTrie) ensurePool(w int) {
	for len(t.pool) < w {
		t.pool = append(t.pool, newHasher())
	}
}

// dirty reports whether n is a branch or short node without a cached
// reference.
func dirty(n node) bool {
	switch n := n.(type) {
	case *fullNode:
		return n.cache.dirty()
	case *shortNode:
		return n.cache.dirty()
	}
	return false
}

// forkDepth is how many branch levels below the root the parallel hasher
// may hand dirty children to other goroutines; deeper subtrees are hashed
// by the goroutine that reached them.
const forkDepth = 4

// forkHasher hashes one trie on the parallel engine: fork-join over the
// dirty children of branches, a child going to a new goroutine whenever a
// worker is idle (so large subtrees, as in clustered data, split further
// and the workers stay balanced), each goroutine with its own hasher.
type forkHasher struct {
	sem  chan struct{} // a token per goroutine beyond the caller's
	free chan *hasher  // the hashers of idle goroutines
}

// hashSubtrees computes and caches the references of every dirty node
// below the root on Workers goroutines, leaving only the root to the
// caller (which then hashes it if it is short).
func (t *cpuTrie) hashSubtrees() {
	if !dirty(t.root) {
		return
	}
	t.ensurePool(t.workers - 1)
	f := &forkHasher{sem: make(chan struct{}, t.workers-1), free: make(chan *hasher, t.workers-1)}
	for _, h := range t.pool[:t.workers-1] {
		f.free <- h
	}
	f.ref(t.hasher, t.root, 0)
	for _, h := range t.pool[:t.workers-1] {
		t.hasher.nodes += h.nodes
		h.nodes = 0
	}
}

// ref is hasher.ref with the dirty children of branches down to forkDepth
// hashed on other goroutines when workers are idle.
func (f *forkHasher) ref(h *hasher, n node, depth int) {
	switch n := n.(type) {
	case *fullNode:
		if !n.cache.dirty() {
			return
		}
		if depth >= forkDepth {
			h.ref(n)
			return
		}
		var wg sync.WaitGroup
		for _, c := range n.children[:16] {
			if !dirty(c) {
				continue
			}
			select {
			case f.sem <- struct{}{}:
				wg.Add(1)
				go func() {
					defer wg.Done()
					h2 := <-f.free
					f.ref(h2, c, depth+1)
					f.free <- h2
					<-f.sem
				}()
			default:
				f.ref(h, c, depth+1)
			}
		}
		wg.Wait()
		h.finish(n, &n.cache)
	case *shortNode:
		if !n.cache.dirty() {
			return
		}
		if _, leaf := n.val.(valueNode); !leaf {
			f.ref(h, n.val, depth)
		}
		h.finish(n, &n.cache)
	}
}

// lookup looks every key up without copying (see Trie.Lookup), on
// Workers goroutines on the parallel engine.
func (t *cpuTrie) lookup(keys [][]byte) (values [][]byte, found []bool, err error) {
	defer t.timed("lookup", len(keys), time.Now())
	values, found = make([][]byte, len(keys)), make([]bool, len(keys))
	t.forEach(len(keys), func(h *hasher, lo, hi int) {
		for i := lo; i < hi; i++ {
			key := keys[i]
			if t.secure {
				sum := h.sum(key)
				key = sum[:]
			}
			values[i], found[i] = lookup(t.root, key)
		}
	})
	return values, found, nil
}

// lookup returns the value stored under the trie key key below root,
// reading key's nibbles in place. It only reads the trie.
func lookup(root node, key []byte) ([]byte, bool) {
	nibble := func(i int) byte {
		if i == 2*len(key) {
			return terminator
		}
		if i&1 == 0 {
			return key[i/2] >> 4
		}
		return key[i/2] & 0x0f
	}
	end := 2*len(key) + 1 // nibbles with terminator
	n, pos := root, 0
	for {
		switch nn := n.(type) {
		case nil:
			return nil, false
		case valueNode:
			return nn, true
		case *shortNode:
			if end-pos < len(nn.key) {
				return nil, false
			}
			for j, c := range nn.key {
				if nibble(pos+j) != c {
					return nil, false
				}
			}
			pos, n = pos+len(nn.key), nn.val
		case *fullNode:
			n = nn.children[nibble(pos)]
			pos++
		default:
			panic(fmt.Sprintf("mpt: unexpected node %T", n))
		}
	}
}

// prove returns every key's proof, hashing dirty nodes first; the
// parallel engine builds the proofs on Workers goroutines.
func (t *cpuTrie) prove(keys [][]byte) ([][][]byte, error) {
	if _, err := t.rootHash(); err != nil {
		return nil, err
	}
	defer t.timed("prove", len(keys), time.Now())
	proofs := make([][][]byte, len(keys))
	var mu sync.Mutex
	var first error
	t.forEach(len(keys), func(h *hasher, lo, hi int) {
		for i := lo; i < hi; i++ {
			p, err := prove(t.root, t.pathWith(h, keys[i]))
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
			proofs[i] = p
		}
	})
	if first != nil {
		return nil, first
	}
	return proofs, nil
}
