package protocol

import "encoding/base64"

// base64Table maps a byte to its 6-bit value; invalidB64 marks bytes the
// decoder skips. '=' decodes as 0 (padding), as in memcached's table.
var base64Table = func() (t [256]byte) {
	for i := range t {
		t[i] = invalidB64
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" {
		t[c] = byte(i)
	}
	t['='] = 0
	return t
}()

const invalidB64 = 0x80

// base64Decode decodes src into dst as memcached's base64_decode does (the
// meta protocol's b flag): characters outside the alphabet are skipped, the
// valid ones must come in groups of four, and decoding stops after the
// first group holding padding. It returns the decoded bytes, or ok false
// where memcached fails (which includes an empty result). dst needs
// len(src) bytes of room. Cost: two passes over src.
func base64Decode(dst, src []byte) (out []byte, ok bool) {
	count := 0
	for _, c := range src {
		if base64Table[c] != invalidB64 {
			count++
		}
	}
	if count == 0 || count%4 != 0 {
		return nil, false
	}
	out = dst[:0]
	var block [4]byte
	n, pad := 0, 0
	for _, c := range src {
		v := base64Table[c]
		if v == invalidB64 {
			continue
		}
		if c == '=' {
			pad++
		}
		block[n] = v
		n++
		if n < 4 {
			continue
		}
		out = append(out, block[0]<<2|block[1]>>4, block[1]<<4|block[2]>>2, block[2]<<6|block[3])
		n = 0
		if pad > 0 {
			if pad > 2 {
				return nil, false
			}
			out = out[:len(out)-pad]
			break
		}
	}
	return out, len(out) > 0
}

// appendBase64 appends the standard, padded base64 encoding of src.
func appendBase64(dst, src []byte) []byte {
	return base64.StdEncoding.AppendEncode(dst, src)
}
