package mpt

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/sha3"
)

// ErrBadProof is wrapped by every error VerifyProof returns.
var ErrBadProof = errors.New("mpt: bad proof")

// Prove returns the Merkle proof of key: the RLP encodings of the nodes on
// the path from the root towards key, root first, leaving out nodes that
// are inlined in their parent (under 32 bytes) except the root. For an
// absent key it proves absence: the path ends at the node where key leaves
// the trie. The list is exactly what go-ethereum's Trie.Prove writes, in
// the same order, and its trie.VerifyProof accepts it; an empty trie gives
// an empty proof. It hashes dirty nodes first (see Hash). Cost: Hash's,
// plus one encoding per node on the path.
func (t *Trie) Prove(key []byte) ([][]byte, error) {
	p, err := t.ProveBatch([][]byte{key})
	if err != nil {
		return nil, err
	}
	return p[0], nil
}

// ProveBatch returns Prove's proof of every key, hashing dirty nodes
// first; the parallel engine builds the proofs on Workers goroutines, the
// GPU engine on the device in two passes (sizes, then encodings). Cost:
// Hash's, plus Prove's per key.
func (t *Trie) ProveBatch(keys [][]byte) ([][][]byte, error) {
	e, err := t.lock("prove")
	if err != nil {
		return nil, err
	}
	defer t.unlock()
	p, err := e.prove(keys)
	if err != nil {
		return nil, fmt.Errorf("mpt: prove on the %s engine: %w", t.opts.Engine, err)
	}
	return p, nil
}

// prove returns the proof of the nibble path below root, whose nodes must
// all be hashed. It only reads the trie, so goroutines may call it
// concurrently.
func prove(root node, path []byte) ([][]byte, error) {
	var proof [][]byte
	n := root
	for i := 0; len(path) > 0 && n != nil; i++ {
		if i == 0 || len(childRef(n)) == 32 {
			proof = append(proof, appendNode(nil, n))
		}
		switch nn := n.(type) {
		case *shortNode:
			if len(path) < len(nn.key) || prefixLen(path, nn.key) < len(nn.key) {
				n = nil
			} else {
				path, n = path[len(nn.key):], nn.val
			}
		case *fullNode:
			path, n = path[1:], nn.children[path[0]]
		default:
			return nil, fmt.Errorf("mpt: prove: unexpected %T on the path", n)
		}
	}
	return proof, nil
}

// VerifyProof checks a proof of key against root and returns the value it
// proves: nil with a nil error when it proves that key is absent. The
// proof nodes may come in any order (they are looked up by hash, as in
// go-ethereum's trie.VerifyProof, whose results this matches). key is the
// trie key: for a proof from a secure trie pass HashKey(key), as with
// go-ethereum's StateTrie proofs. A missing or malformed node returns an
// error wrapping ErrBadProof. Cost: one Keccak-256 per proof node plus one
// decoding per node on the path.
func VerifyProof(root [32]byte, key []byte, proof [][]byte) ([]byte, error) {
	h := sha3.NewLegacyKeccak256()
	byHash := make(map[[32]byte][]byte, len(proof))
	for _, enc := range proof {
		var sum [32]byte
		h.Reset()
		h.Write(enc)
		h.Sum(sum[:0])
		byHash[sum] = enc
	}
	path := keyToHex(key)
	want := root
	for i := 0; ; i++ {
		enc, ok := byHash[want]
		if !ok {
			return nil, fmt.Errorf("%w: node %d (hash %x) missing", ErrBadProof, i, want)
		}
		n, err := decodeNode(enc)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrBadProof, i, err)
		}
		rest, child := walk(n, path)
		switch c := child.(type) {
		case nil:
			return nil, nil
		case hashNode:
			path, want = rest, [32]byte(c)
		case valueNode:
			return append([]byte(nil), c...), nil
		}
	}
}

// walk follows path through a node and its children (a decoded node's are
// inlined or hash references) until it reaches a value, a hash reference
// or a dead end (nil), returning the unconsumed path. It only reads the
// trie.
func walk(n node, path []byte) ([]byte, node) {
	for {
		switch nn := n.(type) {
		case nil, valueNode, hashNode:
			return path, nn
		case *shortNode:
			if len(path) < len(nn.key) || prefixLen(path, nn.key) < len(nn.key) {
				return nil, nil
			}
			path, n = path[len(nn.key):], nn.val
		case *fullNode:
			if len(path) == 0 {
				return nil, nil
			}
			path, n = path[1:], nn.children[path[0]]
		default:
			panic(fmt.Sprintf("mpt: unexpected node %T", n))
		}
	}
}

// decodeNode decodes the RLP encoding of a branch or short node; children
// are hashNodes or inlined nodes. Cost: O(len(enc)).
func decodeNode(enc []byte) (node, error) {
	kind, payload, rest, err := rlpSplit(enc)
	if err != nil {
		return nil, err
	}
	if kind != rlpList || len(rest) != 0 {
		return nil, fmt.Errorf("%w: a node must be exactly one list", errRLP)
	}
	var items [17][]byte
	var kinds [17]rlpKind
	count := 0
	for len(payload) > 0 {
		if count == 17 {
			return nil, fmt.Errorf("%w: a node list has more than 17 items", errRLP)
		}
		var item []byte
		start := payload
		kinds[count], item, payload, err = rlpSplit(payload)
		if err != nil {
			return nil, err
		}
		if kinds[count] == rlpList {
			item = start[:len(start)-len(payload)] // keep the whole encoding
		}
		items[count] = item
		count++
	}
	switch count {
	case 2:
		if kinds[0] != rlpString {
			return nil, fmt.Errorf("%w: short node path is a list", errRLP)
		}
		key, ok := compactToHex(items[0])
		if !ok {
			return nil, fmt.Errorf("%w: bad hex-prefix path %x", errRLP, items[0])
		}
		if hasTerm(key) {
			if kinds[1] != rlpString {
				return nil, fmt.Errorf("%w: leaf value is a list", errRLP)
			}
			return &shortNode{key: key, val: valueNode(items[1])}, nil
		}
		child, err := decodeRef(kinds[1], items[1])
		if err != nil {
			return nil, err
		}
		if child == nil {
			return nil, fmt.Errorf("%w: extension without child", errRLP)
		}
		return &shortNode{key: key, val: child}, nil
	case 17:
		f := &fullNode{}
		for i := range 16 {
			if f.children[i], err = decodeRef(kinds[i], items[i]); err != nil {
				return nil, fmt.Errorf("branch child %d: %w", i, err)
			}
		}
		if kinds[16] != rlpString {
			return nil, fmt.Errorf("%w: branch value is a list", errRLP)
		}
		if len(items[16]) > 0 {
			f.children[16] = valueNode(items[16])
		}
		return f, nil
	default:
		return nil, fmt.Errorf("%w: a node list has %d items", errRLP, count)
	}
}

// decodeRef decodes a child reference: an empty string (no child), a
// 32-byte hash, or an inlined node under 32 bytes.
func decodeRef(kind rlpKind, item []byte) (node, error) {
	if kind == rlpList {
		if len(item) >= 32 {
			return nil, fmt.Errorf("%w: inlined node of %d bytes", errRLP, len(item))
		}
		return decodeNode(item)
	}
	switch len(item) {
	case 0:
		return nil, nil
	case 32:
		return hashNode(item), nil
	default:
		return nil, fmt.Errorf("%w: reference of %d bytes", errRLP, len(item))
	}
}

// HashKey returns Keccak-256(key): the trie key under which a secure trie
// stores key, and the key to pass to VerifyProof for its proofs.
// Cost: one permutation per 136 bytes of key.
func HashKey(key []byte) [32]byte {
	return newHasher().sum(key)
}
