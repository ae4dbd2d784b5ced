package mpt

import "fmt"

// Iterator walks a trie's key-value pairs in ascending byte order of their
// trie keys (a key comes before the keys it is a proper prefix of). In a
// secure trie the keys are the Keccak-256 hashes of the user keys. An
// Iterator is invalidated by any change to its trie.
type Iterator struct {
	start []byte // nibbles of the first key wanted, without terminator
	stack []iterFrame
	key   []byte
	value []byte
	err   error
}

// iterFrame is a subtree still to visit and its nibble path.
type iterFrame struct {
	n    node
	path []byte
}

// NewIterator returns an iterator over the pairs whose trie key is at
// least start (all pairs for a nil start); call Next before reading the
// first pair. start is a trie key: in a secure trie, a hashed key.
// Cost: O(1); a full walk costs O(nodes), and subtrees entirely below
// start are skipped without being visited.
//
// On the GPU engine the iterator walks a snapshot of the trie downloaded
// here (cost: O(trie size) transfer); a failed download ends the
// iteration at once and Err reports it.
func (t *Trie) NewIterator(start []byte) *Iterator {
	it := &Iterator{start: keyToHex(start)}
	it.start = it.start[:len(it.start)-1]
	e, err := t.lock("iterator")
	if err != nil {
		it.err = err
		return it
	}
	root, err := e.snapshot()
	t.unlock()
	if err != nil {
		it.err = fmt.Errorf("mpt: iterator on the %s engine: %w", t.opts.Engine, err)
		return it
	}
	if root != nil {
		it.stack = append(it.stack, iterFrame{n: root})
	}
	return it
}

// Err returns the error that ended the iteration early (only the GPU
// engine's snapshot can fail), or nil. Cost: O(1).
func (it *Iterator) Err() error { return it.err }

// Next advances to the next pair and reports whether there is one.
// Cost: amortised O(1) nodes per pair plus the key's length.
func (it *Iterator) Next() bool {
	for len(it.stack) > 0 {
		f := it.stack[len(it.stack)-1]
		it.stack = it.stack[:len(it.stack)-1]
		switch n := f.n.(type) {
		case valueNode:
			if compareNibbles(f.path, it.start) < 0 {
				continue
			}
			it.key, it.value = hexToKey(f.path), n
			return true
		case *shortNode:
			key := n.key
			if hasTerm(key) {
				key = key[:len(key)-1]
			}
			it.push(n.val, concat(f.path, key))
		case *fullNode:
			for i := 15; i >= 0; i-- {
				if n.children[i] != nil {
					it.push(n.children[i], concat(f.path, []byte{byte(i)}))
				}
			}
			it.push(n.children[terminator], f.path) // the shortest key first
		default:
			panic(fmt.Sprintf("mpt: iterator: unexpected %T", f.n))
		}
	}
	it.key, it.value = nil, nil
	return false
}

// push schedules the subtree n at path unless every key in it is below
// the start key.
func (it *Iterator) push(n node, path []byte) {
	if n == nil {
		return
	}
	if compareNibbles(path, it.start[:min(len(path), len(it.start))]) < 0 {
		return
	}
	it.stack = append(it.stack, iterFrame{n: n, path: path})
}

// Key returns the current pair's trie key; the slice is the caller's.
// Cost: O(1).
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current pair's value; it must not be modified.
// Cost: O(1).
func (it *Iterator) Value() []byte { return it.value }

// compareNibbles compares two nibble strings lexicographically.
func compareNibbles(a, b []byte) int {
	m := prefixLen(a, b)
	switch {
	case m < len(a) && m < len(b):
		return int(a[m]) - int(b[m])
	default:
		return len(a) - len(b)
	}
}
