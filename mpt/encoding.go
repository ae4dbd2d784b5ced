package mpt

// Key encodings. A trie path is a "hex" key: one nibble (0..15) per byte,
// high nibble first, followed by the terminator 16 when the path ends at a
// value. Inside node encodings paths use Ethereum's hex-prefix ("compact")
// form: a flag nibble (bit 1 = terminated, bit 0 = odd length), a zero pad
// nibble when the length is even, then the nibbles packed two per byte.

// terminator marks the end of a key's nibble path; it is also the index of
// a branch node's value slot.
const terminator = 16

// keyToHex returns the nibbles of key followed by the terminator.
// Cost: one allocation of 2*len(key)+1 bytes.
func keyToHex(key []byte) []byte {
	hex := make([]byte, 2*len(key)+1)
	for i, b := range key {
		hex[2*i] = b >> 4
		hex[2*i+1] = b & 0x0f
	}
	hex[len(hex)-1] = terminator
	return hex
}

// hexToKey packs an even number of nibbles (a trailing terminator is
// ignored) back into bytes. Cost: one allocation of len(hex)/2 bytes.
func hexToKey(hex []byte) []byte {
	if hasTerm(hex) {
		hex = hex[:len(hex)-1]
	}
	key := make([]byte, len(hex)/2)
	for i := range key {
		key[i] = hex[2*i]<<4 | hex[2*i+1]
	}
	return key
}

// hasTerm reports whether the nibble path ends with the terminator.
func hasTerm(hex []byte) bool {
	return len(hex) > 0 && hex[len(hex)-1] == terminator
}

// appendCompact appends the hex-prefix encoding of the nibble path hex.
func appendCompact(buf, hex []byte) []byte {
	var flag byte
	if hasTerm(hex) {
		flag = 2
		hex = hex[:len(hex)-1]
	}
	if len(hex)%2 == 1 {
		flag |= 1
		buf = append(buf, flag<<4|hex[0])
		hex = hex[1:]
	} else {
		buf = append(buf, flag<<4)
	}
	for i := 0; i < len(hex); i += 2 {
		buf = append(buf, hex[i]<<4|hex[i+1])
	}
	return buf
}

// compactToHex decodes a hex-prefix encoded path into nibbles, with the
// terminator appended when the flag says so. ok is false for a malformed
// flag byte.
func compactToHex(compact []byte) (hex []byte, ok bool) {
	if len(compact) == 0 {
		return nil, false
	}
	flag := compact[0] >> 4
	if flag > 3 || (flag&1 == 0 && compact[0]&0x0f != 0) {
		return nil, false
	}
	hex = make([]byte, 0, 2*len(compact)+1)
	if flag&1 == 1 {
		hex = append(hex, compact[0]&0x0f)
	}
	for _, b := range compact[1:] {
		hex = append(hex, b>>4, b&0x0f)
	}
	if flag&2 != 0 {
		hex = append(hex, terminator)
	}
	return hex, true
}

// prefixLen returns the length of the common prefix of a and b.
func prefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// concat returns a new slice holding a followed by b; it never aliases its
// arguments, so node paths can be shared safely.
func concat(a, b []byte) []byte {
	out := make([]byte, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}
