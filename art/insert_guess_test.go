package art

import "testing"

// TestLeafGuess checks the leaf kind an insert grows its pool for early:
// the kind of one length when every key looks that long, else none.
func TestLeafGuess(t *testing.T) {
	keysOf := func(lens ...int) Keys {
		ks := make([][]byte, len(lens))
		for i, n := range lens {
			ks[i] = make([]byte, n)
		}
		return Pack(ks)
	}
	for _, c := range []struct {
		name string
		kb   Keys
		want int
	}{
		{"no keys", Keys{}, 0},
		{"16 bytes each", keysOf(16, 16, 16), kindL16},
		{"8 bytes each", keysOf(8, 8), kindL8},
		{"32 bytes each", keysOf(32, 32), kindL32},
		{"empty keys", keysOf(0, 0), kindL8},
		{"mixed lengths", keysOf(16, 8, 16), 0},
		{"arena keys", keysOf(40, 40), 0},
	} {
		if got := leafGuess(c.kb); got != c.want {
			t.Errorf("%s: leafGuess = %d, want %d", c.name, got, c.want)
		}
	}
}
