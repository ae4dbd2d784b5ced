package mpt

import (
	"hash"

	"golang.org/x/crypto/sha3"
)

// hasher computes node references bottom-up, reusing one Keccak state and
// one encoding buffer. It is owned by a single Trie and not safe for
// concurrent use.
type hasher struct {
	keccak hash.Hash
	buf    []byte
	nodes  int // nodes encoded so far, for tests of the cache
}

// newHasher returns a hasher with a fresh Keccak-256 state.
func newHasher() *hasher {
	return &hasher{keccak: sha3.NewLegacyKeccak256()}
}

// sum returns Keccak-256(data). Cost: one permutation per 136 bytes.
func (h *hasher) sum(data []byte) [32]byte {
	var out [32]byte
	h.keccak.Reset()
	h.keccak.Write(data)
	h.keccak.Sum(out[:0])
	return out
}

// ref returns n's reference (see nodeCache), computing and caching the
// references of n and of every dirty node below it. Clean subtrees are not
// visited. Cost: one encoding and at most one Keccak-256 per dirty node.
func (h *hasher) ref(n node) []byte {
	switch n := n.(type) {
	case *fullNode:
		if n.cache.ref == nil {
			for _, c := range n.children[:16] {
				if c != nil {
					h.ref(c)
				}
			}
			n.cache.ref = h.finish(n)
		}
		return n.cache.ref
	case *shortNode:
		if n.cache.ref == nil {
			if _, ok := n.val.(valueNode); !ok {
				h.ref(n.val)
			}
			n.cache.ref = h.finish(n)
		}
		return n.cache.ref
	case hashNode:
		return n
	default:
		return nil
	}
}

// finish encodes n, whose children are hashed, and returns its reference:
// a fresh copy of the encoding when under 32 bytes, else its hash.
func (h *hasher) finish(n node) []byte {
	h.nodes++
	h.buf = appendNode(h.buf[:0], n)
	if len(h.buf) < 32 {
		return append([]byte(nil), h.buf...)
	}
	sum := h.sum(h.buf)
	return sum[:]
}

// rootHash returns the hash of the trie rooted at n: the empty root for
// nil, and the Keccak-256 of the root's encoding even when it is short.
func (h *hasher) rootHash(n node) [32]byte {
	if n == nil {
		return EmptyRoot
	}
	ref := h.ref(n)
	if len(ref) == 32 {
		return [32]byte(ref)
	}
	return h.sum(ref)
}
