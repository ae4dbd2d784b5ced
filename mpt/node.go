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
// encoding itself. ref is nil while the node is dirty.
type nodeCache struct {
	ref []byte
}

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
		return n.cache.ref
	case *shortNode:
		return n.cache.ref
	case hashNode:
		return n
	default:
		panic(fmt.Sprintf("mpt: unexpected child %T", n))
	}
}

// appendNode appends the RLP encoding of n, a *fullNode or *shortNode
// whose children all hold a cached reference. Cost: O(encoding size).
func appendNode(buf []byte, n node) []byte {
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
		return appendString(buf, v)
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
			return appendString(buf, v)
		}
		return appendRef(buf, childRef(n.val))
	default:
		panic(fmt.Sprintf("mpt: cannot encode %T", n))
	}
}
