package mpt

import (
	"hash"

	"golang.org/x/crypto/sha3"
)

// keccakState is x/crypto's legacy Keccak-256 state, which also squeezes
// with Read: Read pads and permutes in place, where Sum first copies the
// whole state.
type keccakState interface {
	hash.Hash
	Read(out []byte) (int, error)
}

// hasher computes node references bottom-up, reusing one Keccak state and
// one encoding buffer, and storing each reference in its node (nothing is
// allocated per node). It is owned by a single goroutine at a time.
type hasher struct {
	keccak keccakState
	buf    []byte
	nodes  int // nodes encoded so far, for tests of the cache
}

// newHasher returns a hasher with a fresh Keccak-256 state.
func newHasher() *hasher {
	return &hasher{keccak: sha3.NewLegacyKeccak256().(keccakState), buf: make([]byte, 0, 600)}
}

// sum returns Keccak-256(data). Cost: one permutation per 136 bytes.
func (h *hasher) sum(data []byte) [32]byte {
	var out [32]byte
	h.keccak.Reset()
	h.keccak.Write(data)
	h.keccak.Read(out[:])
	return out
}

// ref returns n's reference (see nodeCache), computing and caching the
// references of n and of every dirty node below it. Clean subtrees are not
// visited. Cost: one encoding and at most one Keccak-256 per dirty node.
func (h *hasher) ref(n node) []byte {
	switch n := n.(type) {
	case *fullNode:
		if n.cache.dirty() {
			for _, c := range n.children[:16] {
				if c != nil {
					h.ref(c)
				}
			}
			h.finish(n, &n.cache)
		}
		return n.cache.bytes()
	case *shortNode:
		if n.cache.dirty() {
			if _, ok := n.val.(valueNode); !ok {
				h.ref(n.val)
			}
			h.finish(n, &n.cache)
		}
		return n.cache.bytes()
	case hashNode:
		return n
	default:
		return nil
	}
}

// finish encodes n, whose children are hashed, and stores its reference
// in c, n's cache: the encoding itself when under 32 bytes, else its hash.
// A value at the end of the encoding is absorbed from the node, not copied.
func (h *hasher) finish(n node, c *nodeCache) {
	h.nodes++
	head, tail := appendNodeHead(h.buf[:0], n)
	h.buf = head
	if len(head)+len(tail) < 32 {
		c.set(head)
		c.n += uint8(copy(c.ref[c.n:], tail))
		return
	}
	h.keccak.Reset()
	h.keccak.Write(head)
	h.keccak.Write(tail)
	h.keccak.Read(c.ref[:])
	c.n = 32
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
