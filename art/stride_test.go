package art

import "testing"

// TestKeyStride finds the length of batches of equal-length keys, and
// nothing else: a key of another length anywhere (first, last, in a
// later part), offsets not starting at 0, and offsets that wrap.
func TestKeyStride(t *testing.T) {
	fixed := func(n, l int) []uint32 {
		o := make([]uint32, n+1)
		for i := range o {
			o[i] = uint32(i * l)
		}
		return o
	}
	long := fixed(300000, 16)
	long[250001]++ // one key a byte longer, the next a byte shorter, in a later part
	first := fixed(1000, 8)
	first[1]++
	last := fixed(1000, 8)
	last[1000]++
	shifted := fixed(1000, 8)
	for i := range shifted {
		shifted[i] += 8
	}
	wrapped := fixed(1<<16, 1<<16) // offset 2^32 wraps to 0
	for _, c := range []struct {
		name string
		offs []uint32
		want int
	}{
		{"16-byte keys", fixed(300000, 16), 16},
		{"one key", fixed(1, 5), 5},
		{"empty keys", fixed(70000, 0), 0},
		{"no keys", fixed(0, 3), -1},
		{"none at all", nil, -1},
		{"another length in a later part", long, -1},
		{"the first key longer", first, -1},
		{"the last key longer", last, -1},
		{"offsets from 8", shifted, -1},
		{"offsets that wrap", append(wrapped, 0), -1},
	} {
		if got := keyStride(c.offs); got != c.want {
			t.Errorf("%s: stride %d, want %d", c.name, got, c.want)
		}
	}
}
