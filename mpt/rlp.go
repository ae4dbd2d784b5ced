package mpt

import (
	"errors"
	"fmt"
)

// A small RLP codec for the shapes trie nodes need: byte strings and lists
// of byte strings and lists. Sizes are computed before writing so every
// encoding is produced in one pass with no intermediate buffers.

// errRLP is wrapped by every RLP decoding error.
var errRLP = errors.New("mpt: bad RLP")

// headerSize returns the size of an RLP length prefix for a payload of n
// bytes (string or list; a single byte below 0x80 is handled by stringSize).
func headerSize(n int) int {
	if n <= 55 {
		return 1
	}
	return 1 + byteLen(uint64(n))
}

// byteLen returns the number of big-endian bytes needed for v > 0.
func byteLen(v uint64) int {
	n := 0
	for ; v > 0; v >>= 8 {
		n++
	}
	return n
}

// stringSize returns the size of the RLP encoding of the byte string b.
func stringSize(b []byte) int {
	if len(b) == 1 && b[0] < 0x80 {
		return 1
	}
	return headerSize(len(b)) + len(b)
}

// appendHeader appends the length prefix for a payload of n bytes, with
// short offset 0x80 (string) or 0xc0 (list).
func appendHeader(buf []byte, offset byte, n int) []byte {
	if n <= 55 {
		return append(buf, offset+byte(n))
	}
	l := byteLen(uint64(n))
	buf = append(buf, offset+55+byte(l))
	for i := l - 1; i >= 0; i-- {
		buf = append(buf, byte(n>>(8*i)))
	}
	return buf
}

// appendString appends the RLP encoding of the byte string b.
func appendString(buf, b []byte) []byte {
	if len(b) == 1 && b[0] < 0x80 {
		return append(buf, b[0])
	}
	return append(appendHeader(buf, 0x80, len(b)), b...)
}

// appendStringHead appends the RLP encoding of the byte string b up to
// its raw bytes and returns them as tail (nil when b is empty or a single
// byte below 0x80, which appendStringHead writes itself).
func appendStringHead(buf, b []byte) (head, tail []byte) {
	switch {
	case len(b) == 0:
		return append(buf, 0x80), nil
	case len(b) == 1 && b[0] < 0x80:
		return append(buf, b[0]), nil
	}
	return appendHeader(buf, 0x80, len(b)), b
}

// rlpKind is the kind of an RLP item.
type rlpKind int

const (
	rlpString rlpKind = iota
	rlpList
)

// rlpSplit splits the first RLP item off b: its kind, its payload and the
// bytes after it. It rejects non-canonical encodings as go-ethereum's rlp
// package does. Cost: O(1).
func rlpSplit(b []byte) (kind rlpKind, payload, rest []byte, err error) {
	if len(b) == 0 {
		return 0, nil, nil, fmt.Errorf("%w: unexpected end of input", errRLP)
	}
	p := b[0]
	var hdr, size int
	switch {
	case p < 0x80:
		return rlpString, b[:1], b[1:], nil
	case p <= 0xb7:
		kind, hdr, size = rlpString, 1, int(p-0x80)
		if size == 1 && len(b) > 1 && b[1] < 0x80 {
			return 0, nil, nil, fmt.Errorf("%w: single byte below 0x80 in a string header", errRLP)
		}
	case p < 0xc0:
		kind = rlpString
		hdr, size, err = longSize(b, int(p-0xb7))
	case p <= 0xf7:
		kind, hdr, size = rlpList, 1, int(p-0xc0)
	default:
		kind = rlpList
		hdr, size, err = longSize(b, int(p-0xf7))
	}
	if err != nil {
		return 0, nil, nil, err
	}
	if size > len(b)-hdr {
		return 0, nil, nil, fmt.Errorf("%w: item of %d bytes exceeds the %d left", errRLP, size, len(b)-hdr)
	}
	return kind, b[hdr : hdr+size], b[hdr+size:], nil
}

// longSize decodes a long-form length of l bytes following b[0] and
// returns the header size and payload size.
func longSize(b []byte, l int) (hdr, size int, err error) {
	if l > 4 || len(b) < 1+l {
		return 0, 0, fmt.Errorf("%w: bad length of length %d", errRLP, l)
	}
	if b[1] == 0 {
		return 0, 0, fmt.Errorf("%w: leading zero in length", errRLP)
	}
	for _, c := range b[1 : 1+l] {
		size = size<<8 | int(c)
	}
	if size <= 55 {
		return 0, 0, fmt.Errorf("%w: long form for a size of %d", errRLP, size)
	}
	return 1 + l, size, nil
}
