package mpt

import "fmt"

// node is one of *fullNode, *shortNode, valueNode, or, only in nodes
// decoded from a proof, hashNode. A nil node is an empty subtree.
type node interface{}

// fullNode is a branch: 16 children by next nibble plus, in slot 16, the
// value of the key that ends here.
type fullNode struct {
	children [17]node
	cache    nodeCache
}

// shortNode is a leaf when key ends with the terminator (val is then a
// valueNode) and an extension otherwise (val is then a *fullNode). key is
// never mutated in place: it may share its backing array with other nodes.
type shortNode struct {
	key   []byte
	val   node
	cache nodeCache
}

// valueNode is a stored value; it is never empty.
type valueNode []byte

// hashNode is a 32-byte reference to a node not held in memory; it only
// appears in nodes decoded from proofs.
type hashNode []byte

// nodeCache holds a node's reference as its parent embeds it: the
// Keccak-256 of its encoding when that is 32 bytes or longer, else the
// encoding itself, stored in the node (no allocation per hashed node).
// n, the reference's length, is 0 while the node is dirty.
type nodeCache struct {
	ref [32]byte
	n   uint8
}

// bytes returns the cached reference, nil while the node is dirty. The
// slice aliases the node: it is valid until the node changes.
func (c *nodeCache) bytes() []byte {
	if c.n == 0 {
		return nil
	}
	return c.ref[:c.n:c.n]
}

// dirty reports whether the node has no cached reference.
func (c *nodeCache) dirty() bool { return c.n == 0 }

// clear forgets the reference (the node changed).
func (c *nodeCache) clear() { c.n = 0 }

// set caches ref, a hash or an encoding under 32 bytes.
func (c *nodeCache) set(ref []byte) { c.n = uint8(copy(c.ref[:], ref)) }

// refSize returns the size of a child reference inside a parent's
// encoding: an empty string for no child, a 33-byte string for a hash,
// the raw encoding for an inlined node.
func refSize(ref []byte) int {
	switch len(ref) {
	case 0:
		return 1
	case 32:
		return 33
	default:
		return len(ref)
	}
}

// appendRef appends a child reference to a parent's encoding.
func appendRef(buf, ref []byte) []byte {
	switch len(ref) {
	case 0:
		return append(buf, 0x80)
	case 32:
		return append(append(buf, 0x80+32), ref...)
	default:
		return append(buf, ref...)
	}
}

// childRef returns the cached reference of a child node of a branch or
// extension; the child must have been hashed.
func childRef(n node) []byte {
	switch n := n.(type) {
	case nil:
		return nil
	case *fullNode:
		return n.cache.bytes()
	case *shortNode:
		return n.cache.bytes()
	case hashNode:
		return n
	default:
		panic(fmt.Sprintf("mpt: unexpected child %T", n))
	}
}

// appendNode appends the RLP encoding of n, a *fullNode or *shortNode
// whose children all hold a cached reference. Cost: O(encoding size).
func appendNode(buf []byte, n node) []byte {
	buf, tail := appendNodeHead(buf, n)
	return append(buf, tail...)
}

// appendNodeHead appends the RLP encoding of n (as appendNode) up to the
// raw bytes of its value, which a leaf's and a branch's encoding end with,
// and returns those bytes as tail (nil when the encoding has none: no
// value, or a single byte below 0x80 that is its own encoding), so that a
// hasher can absorb a long value without copying it. Cost: O(encoding
// size without the value).
func appendNodeHead(buf []byte, n node) (head, tail []byte) {
	switch n := n.(type) {
	case *fullNode:
		size := 0
		for _, c := range n.children[:16] {
			size += refSize(childRef(c))
		}
		v, _ := n.children[16].(valueNode)
		size += stringSize(v)
		buf = appendHeader(buf, 0xc0, size)
		for _, c := range n.children[:16] {
			buf = appendRef(buf, childRef(c))
		}
		return appendStringHead(buf, v)
	case *shortNode:
		var kbuf [40]byte
		k := appendCompact(kbuf[:0], n.key)
		size := stringSize(k)
		v, isValue := n.val.(valueNode)
		if isValue {
			size += stringSize(v)
		} else {
			size += refSize(childRef(n.val))
		}
		buf = appendHeader(buf, 0xc0, size)
		buf = appendString(buf, k)
		if isValue {
			return appendStringHead(buf, v)
		}
		return appendRef(buf, childRef(n.val)), nil
	default:
		panic(fmt.Sprintf("mpt: cannot encode %T", n))
	}
}
