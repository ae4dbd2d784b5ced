package protocol

import (
	"bytes"
	"math"
)

// Numeric arguments are parsed as memcached 1.6 parses them on a 64-bit
// Linux host: with the C library's strtoull and strtol (leading white space
// and a sign allowed, trailing white space ends the number), then truncated
// to the width memcached stores (safe_strtoul and safe_strtol keep the low
// 32 bits of a 64-bit result). This decides which requests are accepted and
// what a too-wide number turns into.

// isCSpace reports whether c is white space for C's isspace.
func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// cScan is the scan C's strtoull and strtoll share: leading white space,
// an optional sign, then decimal digits, accumulated while the magnitude
// stays at most limit(neg). It returns the magnitude, the sign, the index
// just past the digits (0 when there are none) and whether the magnitude
// passed the limit (ERANGE; the digits are still consumed).
func cScan(s []byte, limit func(neg bool) uint64) (mag uint64, neg bool, end int, overflow bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	lim := limit(neg)
	start := i
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if overflow || mag > (lim-d)/10 {
			overflow = true
			continue
		}
		mag = mag*10 + d
	}
	if i == start {
		return 0, false, 0, false
	}
	return mag, neg, i, overflow
}

// unsignedLimit is strtoull's limit on the magnitude, either sign.
func unsignedLimit(bool) uint64 { return math.MaxUint64 }

// signedLimit is strtoll's limit on the magnitude: MaxInt64, or its
// negation's magnitude after a minus sign.
func signedLimit(neg bool) uint64 {
	if neg {
		return uint64(math.MaxInt64) + 1
	}
	return math.MaxInt64
}

// cStrtoull parses s as C's strtoull(s, &end, 10): it returns the value
// (negated modulo 2^64 after a minus sign), the index just past the digits
// (0 when there are none), and whether the magnitude overflowed (ERANGE).
func cStrtoull(s []byte) (v uint64, end int, overflow bool) {
	mag, neg, end, overflow := cScan(s, unsignedLimit)
	switch {
	case end == 0:
		return 0, 0, false
	case overflow:
		return math.MaxUint64, end, true
	case neg:
		return -mag, end, false
	}
	return mag, end, false
}

// cStrtoll parses s as C's strtoll(s, &end, 10) (strtol on LP64).
func cStrtoll(s []byte) (v int64, end int, overflow bool) {
	mag, neg, end, overflow := cScan(s, signedLimit)
	switch {
	case end == 0:
		return 0, 0, false
	case overflow && neg:
		return math.MinInt64, end, true
	case overflow:
		return math.MaxInt64, end, true
	case neg:
		return -int64(mag), end, false
	}
	return int64(mag), end, false
}

// numberEnds reports memcached's end test: at least one digit, then the end
// of the token or white space.
func numberEnds(s []byte, end int) bool {
	return end > 0 && (end == len(s) || isCSpace(s[end]))
}

// safeStrtoull is memcached's safe_strtoull: a 64-bit unsigned number; a
// minus sign is refused where the result would be negative as a signed one.
func safeStrtoull(s []byte) (uint64, bool) {
	v, end, overflow := cStrtoull(s)
	if overflow || !numberEnds(s, end) {
		return 0, false
	}
	if int64(v) < 0 && bytes.IndexByte(s, '-') >= 0 {
		return 0, false
	}
	return v, true
}

// safeStrtoul is memcached's safe_strtoul: safeStrtoull truncated to 32 bits
// (flags "4294967296" are stored as 0, as memcached does).
func safeStrtoul(s []byte) (uint32, bool) {
	v, ok := safeStrtoull(s)
	return uint32(v), ok
}

// safeStrtol is memcached's safe_strtol: a 64-bit signed number truncated to
// 32 bits (an expiry of "4294967295" is -1, already expired).
func safeStrtol(s []byte) (int32, bool) {
	v, end, overflow := cStrtoll(s)
	if overflow || !numberEnds(s, end) {
		return 0, false
	}
	return int32(v), true
}
