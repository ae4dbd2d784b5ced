// Package mpt is an Ethereum-compatible Merkle Patricia Trie: the modified
// radix-16 trie of Ethereum's yellow paper, with branch (17 slots),
// extension and leaf nodes, hex-prefix paths, RLP node encodings,
// Keccak-256 node hashes, nodes whose encoding is under 32 bytes inlined in
// their parent, and the root always hashed. Roots and proofs are byte for
// byte those of go-ethereum's trie package for the same key-value set
// (the structure of the trie depends only on that set, never on the order
// of operations); compat/ checks this against go-ethereum.
//
// This file holds the CPU reference engine: a sequential, pointer-based
// trie that applies a batch one operation at a time and hashes lazily,
// caching every node's hash and re-hashing only nodes changed since the
// last Hash. parallel.go holds the parallel CPU engine (Options.Engine =
// EngineParallel), which shares the node representation and produces the
// same nodes, roots and proofs.
package mpt

import (
	"fmt"
	"runtime"
)

// EmptyRoot is the root hash of an empty trie: Keccak-256 of the RLP
// encoding of the empty string (0x80).
var EmptyRoot = [32]byte{
	0x56, 0xe8, 0x1f, 0x17, 0x1b, 0xcc, 0x55, 0xa6, 0xff, 0x83, 0x45, 0xe6, 0x92, 0xc0, 0xf8, 0x6e,
	0x5b, 0x48, 0xe0, 0x1b, 0x99, 0x6c, 0xad, 0xc0, 0x01, 0x62, 0x2f, 0xb5, 0xe3, 0x63, 0xb4, 0x21,
}

// Options configures a Trie.
type Options struct {
	// Secure hashes every key with Keccak-256 before it enters the trie,
	// as Ethereum's state and storage tries (go-ethereum's StateTrie) do.
	// Iteration then yields the hashed keys.
	Secure bool

	// Engine selects the engine: EngineSequential (the default, also for
	// "") applies a batch one operation at a time and hashes on one
	// goroutine; EngineParallel sorts the batch, splits it by nibble and
	// applies the parts to disjoint subtrees on goroutines (the CPU port of
	// the paper's PhaseNU), and hashes dirty subtrees on goroutines;
	// EngineGPU keeps the trie in device memory and runs PhaseNU and
	// PhaseHC on the GPU (the *_gpu.go and .cu files); EngineAuto is EngineGPU where a
	// GPU is usable and EngineParallel elsewhere. All give the same trie,
	// roots and proofs. The GPU engines need Open; New panics on them and
	// on unknown values.
	Engine Engine

	// Workers is the parallel engine's number of goroutines; 0 means
	// GOMAXPROCS. The other engines ignore it.
	Workers int

	// NodeUpdate picks the GPU engine's node-update algorithm:
	// NodeUpdateAuto (the default) lets the decision model choose per
	// batch, NodeUpdatePhase forces PhaseNU, NodeUpdateLock forces LockNU
	// where it can run (batches with deletes or into an empty trie always
	// use PhaseNU). The CPU engines ignore it.
	NodeUpdate NodeUpdate

	// HostValues makes the GPU engine keep a copy of every value in host
	// memory beside the device trie: lookups then bring back only a
	// 4-byte value id per key and read the values from the copy (Lookup's
	// values alias it, LookupInto copies from it on all cores), instead of
	// gathering and downloading them. It costs host memory as large as the
	// device's value arena and a host copy of each batch's values during
	// Update (made while the values are packed for upload). The CPU
	// engines ignore it.
	HostValues bool

	// Device is the GPU engine's device option (auto, gpu, gpu:N; "" means
	// WARPKV_DEVICE, else auto); see gpu.Choose. The CPU engines ignore it.
	Device string
}

// Engine names an engine; see Options.Engine.
type Engine string

// The engines.
const (
	EngineSequential Engine = "sequential"
	EngineParallel   Engine = "parallel"
	EngineGPU        Engine = "gpu"
	EngineAuto       Engine = "auto"
)

// Engines lists the CPU engines, which New accepts, the default first.
func Engines() []Engine { return []Engine{EngineSequential, EngineParallel} }

// ParseEngine returns the engine named s ("" is the sequential engine),
// or an error naming the valid ones.
func ParseEngine(s string) (Engine, error) {
	switch Engine(s) {
	case "", EngineSequential:
		return EngineSequential, nil
	case EngineParallel, EngineGPU, EngineAuto:
		return Engine(s), nil
	}
	return "", fmt.Errorf("mpt: unknown engine %q (want %s, %s, %s or %s)", s, EngineSequential, EngineParallel, EngineGPU, EngineAuto)
}

// Trie is an in-memory Merkle Patricia Trie. It is not safe for concurrent
// use; a Trie must not be copied after first use.
type Trie struct {
	opts    Options
	root    node
	hasher  *hasher
	workers int       // goroutines of the parallel engine; 0 for the sequential one
	pool    []*hasher // the parallel engine's per-goroutine hashers
	grain   int       // the parallel update's grain; 0: sized to the batch (tests set it)
	g       *gpuTrie  // the GPU engine; nil on the CPU engines
	reason  string    // why the engine was chosen (Open with EngineAuto)
	found   [][]byte  // LookupInto's scratch on the CPU engines, reused
}

// New returns an empty trie. It panics when opts.Engine is not one of
// Engines() or opts.Workers is negative (use ParseEngine on user input).
// Cost: O(1).
func New(opts Options) *Trie {
	eng, err := ParseEngine(string(opts.Engine))
	if err != nil {
		panic(err)
	}
	if eng == EngineGPU || eng == EngineAuto {
		panic(fmt.Sprintf("mpt: New with engine %q: use Open", eng))
	}
	if opts.Workers < 0 {
		panic(fmt.Sprintf("mpt: %d workers", opts.Workers))
	}
	opts.Engine = eng
	t := &Trie{opts: opts, hasher: newHasher()}
	if eng == EngineParallel {
		t.workers = opts.Workers
		if t.workers == 0 {
			t.workers = runtime.GOMAXPROCS(0)
		}
	}
	return t
}

// Options returns the options the trie was created with. Cost: O(1).
func (t *Trie) Options() Options { return t.opts }

// pathOf returns the nibble path (with terminator) of a user key: its
// nibbles, or in secure mode the nibbles of its Keccak-256.
func (t *Trie) pathOf(key []byte) []byte {
	return t.pathWith(t.hasher, key)
}

// Update applies a batch: for each i in order, it sets keys[i] to
// values[i], or deletes keys[i] when values[i] is empty (as go-ethereum
// does). Within the batch the last operation on a key wins. Values are
// copied. It returns an error, and changes nothing, when the slices differ
// in length. Cost: O(sum of key lengths in nibbles + value bytes) plus, in
// secure mode, one Keccak-256 per key; hashing is deferred to Hash.
func (t *Trie) Update(keys, values [][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("mpt: update: %d keys but %d values", len(keys), len(values))
	}
	if t.g != nil {
		if err := t.g.update(keys, values); err != nil {
			return fmt.Errorf("mpt: update on the gpu engine: %w", err)
		}
		return nil
	}
	if t.workers > 0 {
		t.parallelUpdate(keys, values)
		return nil
	}
	for i, k := range keys {
		path := t.pathOf(k)
		if len(values[i]) == 0 {
			t.root, _ = t.delete(t.root, path)
			continue
		}
		t.root, _ = t.insert(t.root, path, valueNode(append([]byte(nil), values[i]...)))
	}
	return nil
}

// Delete removes keys from the trie; absent keys are ignored. Branches
// left with one child collapse and short nodes merge exactly as in
// go-ethereum, so roots match. Only the GPU engine can fail (see Update).
// Cost: O(sum of key lengths in nibbles).
func (t *Trie) Delete(keys [][]byte) error {
	if t.g != nil {
		return t.Update(keys, make([][]byte, len(keys)))
	}
	if t.workers > 0 {
		t.parallelUpdate(keys, make([][]byte, len(keys)))
		return nil
	}
	for _, k := range keys {
		t.root, _ = t.delete(t.root, t.pathOf(k))
	}
	return nil
}

// Get returns a copy of the value stored under key and whether it is
// present. Cost: O(key length in nibbles + value length), plus one
// Keccak-256 in secure mode. On the GPU engine it is a batch of one (see
// Lookup; a device failure panics there).
func (t *Trie) Get(key []byte) ([]byte, bool) {
	if t.g != nil {
		v, f := t.GetBatch([][]byte{key})
		return v[0], f[0]
	}
	return get(t.root, t.pathOf(key))
}

// get returns a copy of the value at the nibble path below n. It only
// reads the trie, so goroutines may call it concurrently.
func get(n node, path []byte) ([]byte, bool) {
	for {
		switch nn := n.(type) {
		case nil:
			return nil, false
		case valueNode:
			return append([]byte(nil), nn...), true
		case *shortNode:
			if len(path) < len(nn.key) || prefixLen(path, nn.key) < len(nn.key) {
				return nil, false
			}
			path, n = path[len(nn.key):], nn.val
		case *fullNode:
			path, n = path[1:], nn.children[path[0]]
		default:
			panic(fmt.Sprintf("mpt: unexpected node %T", n))
		}
	}
}

// Hash returns the root hash, EmptyRoot for an empty trie. It hashes only
// the nodes changed since the previous Hash (each once) and caches the
// result. Cost: one RLP encoding and at most one Keccak-256 per dirty node.
// The GPU engine hashes at the end of every batch and returns the hash it
// read back from the root node then (after a failed batch it reads it
// again, and panics if the device fails; RootHash returns that error).
func (t *Trie) Hash() [32]byte {
	if t.g != nil {
		h, err := t.RootHash()
		if err != nil {
			panic(err)
		}
		return h
	}
	if t.workers > 1 {
		t.hashSubtrees()
	}
	return t.hasher.rootHash(t.root)
}

// RootHash is Hash with the GPU engine's device failures returned rather
// than panicking; the CPU engines never fail. Cost: Hash's.
func (t *Trie) RootHash() ([32]byte, error) {
	if t.g != nil {
		h, err := t.g.hashRoot()
		if err != nil {
			return [32]byte{}, fmt.Errorf("mpt: root hash on the gpu engine: %w", err)
		}
		return h, nil
	}
	return t.Hash(), nil
}

// insert stores v at path below n and returns the new subtree and whether
// anything changed. Nodes on the changed path lose their cached hash.
func (t *Trie) insert(n node, path []byte, v valueNode) (node, bool) {
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
			child, changed := t.insert(n.val, path[m:], v)
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
		child, changed := t.insert(n.children[path[0]], path[1:], v)
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
func (t *Trie) delete(n node, path []byte) (node, bool) {
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
		child, changed := t.delete(n.val, path[m:])
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
		child, changed := t.delete(n.children[path[0]], path[1:])
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
