package protocol

import (
	"testing"

	"github.com/warpkv/warpkv/kv"
)

// TestMetaDumpLine: a metadump line as memcached 1.6.18's
// crawler_metadump_eval writes it: the key URI-encoded as its uriencode
// (letters, digits and -._~ kept, every other byte %XX in upper-case hex),
// exp -1 for no expiry, the item size with CAS, its flags' 4 bytes only
// when they are not 0.
func TestMetaDumpLine(t *testing.T) {
	for _, tc := range []struct {
		it   kv.DumpedItem
		want string
	}{
		{kv.DumpedItem{Key: []byte("a"), ValueLen: 3, Flags: 5, LastAccess: 1700000000, CAS: 1, Fetched: true, Class: 1},
			"key=a exp=-1 la=1700000000 cas=1 fetch=yes cls=1 size=67\n"},
		{kv.DumpedItem{Key: []byte("b%20c"), ValueLen: 1, Exptime: 1700000100, LastAccess: 1700000000, CAS: 2, Class: 1},
			"key=b%2520c exp=1700000100 la=1700000000 cas=2 fetch=no cls=1 size=65\n"},
		{kv.DumpedItem{Key: []byte("Az09-._~ /\x00\xff"), ValueLen: 0, CAS: 3, Class: 2},
			"key=Az09-._~%20%2F%00%FF exp=-1 la=0 cas=3 fetch=no cls=2 size=71\n"},
	} {
		if got := string(appendMetaDumpLine(nil, tc.it)); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.it.Key, got, tc.want)
		}
	}
}
