package mpt

import (
	"fmt"
	"runtime"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// The CPU engines (Options.Engine = EngineSequential or EngineParallel):
// a pointer-based trie in Go memory. The sequential engine applies a batch
// one operation at a time and hashes lazily on one goroutine, caching
// every node's reference and re-hashing only nodes changed since the last
// hash; the parallel engine (parallel.go) shares the nodes, the insert
// and the delete, splits batches and hashing over goroutines, and builds
// the same nodes, roots and proofs.

// cpuTrie is the state of a CPU engine. It implements trieEngine.
type cpuTrie struct {
	secure  bool
	root    node
	hasher  *hasher
	workers int       // goroutines of the parallel engine; 0 for the sequential one
	pool    []*hasher // the parallel engine's per-goroutine hashers
	grain   int       // the parallel update's grain; 0: sized to the batch (tests set it)
	found   [][]byte  // lookupInto's scratch, reused
	last    engine.Timings
}

// newCPUTrie returns an empty trie on the CPU engine opts.Engine (already
// validated), with opts.Workers goroutines on the parallel one.
func newCPUTrie(opts Options) *cpuTrie {
	c := &cpuTrie{secure: opts.Secure, hasher: newHasher()}
	if opts.Engine == EngineParallel {
		c.workers = opts.Workers
		if c.workers == 0 {
			c.workers = runtime.GOMAXPROCS(0)
		}
	}
	return c
}

func (c *cpuTrie) backend() gpu.Backend { return gpu.BackendCPU }

func (c *cpuTrie) lastBatch() engine.Timings { return c.last }

func (c *cpuTrie) stats() BatchStats { return BatchStats{} }

func (c *cpuTrie) close() error {
	c.root, c.pool, c.found = nil, nil, nil
	return nil
}

// timed records the host time of one operation as the last batch (all of
// it as Work: nothing moves between host and device).
func (c *cpuTrie) timed(op string, items int, t0 time.Time) {
	d := time.Since(t0)
	c.last = engine.Timings{Op: op, Items: items, Work: d, Total: d}
}

// pathOf returns the nibble path (with terminator) of a user key: its
// nibbles, or in secure mode the nibbles of its Keccak-256.
func (c *cpuTrie) pathOf(key []byte) []byte { return c.pathWith(c.hasher, key) }

// pathWith is pathOf with the given hasher, for use on goroutines.
func (c *cpuTrie) pathWith(h *hasher, key []byte) []byte {
	if c.secure {
		sum := h.sum(key)
		return keyToHex(sum[:])
	}
	return keyToHex(key)
}

// update applies a batch (see Trie.Update): one operation at a time on the
// sequential engine, split over goroutines on the parallel one.
func (c *cpuTrie) update(keys, values [][]byte) error {
	defer c.timed("update", len(keys), time.Now())
	if c.workers > 0 {
		c.parallelUpdate(keys, values)
		return nil
	}
	for i, k := range keys {
		path := c.pathOf(k)
		if len(values[i]) == 0 {
			c.root, _ = c.delete(c.root, path)
			continue
		}
		c.root, _ = c.insert(c.root, path, valueNode(append([]byte(nil), values[i]...)))
	}
	return nil
}

// rootHash hashes the dirty nodes (the subtrees on goroutines on the
// parallel engine) and returns the root hash.
func (c *cpuTrie) rootHash() ([32]byte, error) {
	if c.root == nil || !dirty(c.root) {
		return c.hasher.rootHash(c.root), nil
	}
	defer c.timed("hash", 0, time.Now())
	if c.workers > 1 {
		c.hashSubtrees()
	}
	return c.hasher.rootHash(c.root), nil
}

// snapshot returns the root: the CPU engines' nodes are the snapshot.
func (c *cpuTrie) snapshot() (node, error) { return c.root, nil }

// get returns a copy of the value at the nibble path below n. It only
// reads the trie, so goroutines may call it concurrently.
func get(n node, path []byte) ([]byte, bool) {
	if _, v := walk(n, path); v != nil {
		return append([]byte(nil), v.(valueNode)...), true
	}
	return nil, false
}

// insert stores v at path below n and returns the new subtree and whether
// anything changed. Nodes on the changed path lose their cached hash.
func (c *cpuTrie) insert(n node, path []byte, v valueNode) (node, bool) {
	if len(path) == 0 {
		if old, ok := n.(valueNode); ok && string(old) == string(v) {
			return n, false
		}
		return v, true
	}
	switch n := n.(type) {
	case nil:
		return &shortNode{key: path, val: v}, true
	case *shortNode:
		m := prefixLen(path, n.key)
		if m == len(n.key) {
			child, changed := c.insert(n.val, path[m:], v)
			if changed {
				n.val = child
				n.cache.clear()
			}
			return n, changed
		}
		// The paths diverge at m: a branch holds the old and new tails.
		b := &fullNode{}
		b.children[n.key[m]] = attach(n.key[m+1:], n.val)
		b.children[path[m]] = attach(path[m+1:], v)
		if m == 0 {
			return b, true
		}
		return &shortNode{key: n.key[:m], val: b}, true
	case *fullNode:
		child, changed := c.insert(n.children[path[0]], path[1:], v)
		if changed {
			n.children[path[0]] = child
			n.cache.clear()
		}
		return n, changed
	default:
		panic(fmt.Sprintf("mpt: insert into %T with %d nibbles left", n, len(path)))
	}
}

// attach returns the subtree that holds child under the nibble path
// tail: child itself for an empty tail, else a short node.
func attach(tail []byte, child node) node {
	if len(tail) == 0 {
		return child
	}
	return &shortNode{key: tail, val: child}
}

// delete removes path below n and returns the new subtree and whether
// anything changed, collapsing one-child branches and merging short nodes
// as go-ethereum does.
func (c *cpuTrie) delete(n node, path []byte) (node, bool) {
	switch n := n.(type) {
	case nil:
		return nil, false
	case valueNode:
		return nil, true
	case *shortNode:
		m := prefixLen(path, n.key)
		if m < len(n.key) {
			return n, false
		}
		if m == len(path) {
			return nil, true // the leaf itself
		}
		child, changed := c.delete(n.val, path[m:])
		if !changed {
			return n, false
		}
		if s, ok := child.(*shortNode); ok {
			// The branch below collapsed: merge the two paths.
			return &shortNode{key: concat(n.key, s.key), val: s.val}, true
		}
		n.val = child
		n.cache.clear()
		return n, true
	case *fullNode:
		child, changed := c.delete(n.children[path[0]], path[1:])
		if !changed {
			return n, false
		}
		n.children[path[0]] = child
		n.cache.clear()
		if child != nil {
			return n, true
		}
		pos := -1
		for i, c := range n.children {
			if c != nil {
				if pos >= 0 {
					return n, true // two or more children left
				}
				pos = i
			}
		}
		if pos < 0 {
			return nil, true // unreachable: a branch has two or more children
		}
		if s, ok := n.children[pos].(*shortNode); ok && pos != terminator {
			return &shortNode{key: concat([]byte{byte(pos)}, s.key), val: s.val}, true
		}
		return &shortNode{key: []byte{byte(pos)}, val: n.children[pos]}, true
	default:
		panic(fmt.Sprintf("mpt: delete from %T", n))
	}
}
