package server

import (
	"bytes"
	"testing"

	"github.com/warpkv/warpkv/kv"
)

// TestJoinedItemLimit appends and prepends to an item so that the joined
// item fills memcached's item size limit exactly or passes it by one byte,
// on every engine and on the reference model: memcached stores the first
// and answers NOT_STORED to the second, keeping the old item (its limit
// counts the item's header, key and flags, kv.ItemTotal).
func TestJoinedItemLimit(t *testing.T) {
	const limit = 64 << 10
	key := []byte("joined")
	fits := int(int64(limit) - kv.ItemTotal(len(key), 7, 0))
	old := bytes.Repeat([]byte("o"), 1000)
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{MemoryLimit: 64 << 20, ItemSizeMax: limit})
			model := kv.NewModel(nil)
			model.SetItemSizeMax(limit)
			for _, tc := range []struct {
				kind   kv.Kind
				joined int
				want   kv.Status
			}{
				{kv.Append, fits, kv.Stored},
				{kv.Append, fits + 1, kv.NotStored},
				{kv.Prepend, fits, kv.Stored},
				{kv.Prepend, fits + 1, kv.NotStored},
			} {
				for name, c := range map[string]kv.Cache{"engine": eng, "model": model} {
					ops := []kv.Op{
						{Kind: kv.Set, Key: key, Flags: 7, Value: old},
						{Kind: tc.kind, Key: key, Value: bytes.Repeat([]byte("n"), tc.joined-len(old))},
						{Kind: kv.Get, Key: key},
					}
					do(t, c, ops...)
					if got := ops[1].Result.Status; got != tc.want {
						t.Fatalf("%s: %v to %d joined bytes (limit %d): %v, want %v", name, tc.kind, tc.joined, limit, got, tc.want)
					}
					wantLen := tc.joined
					if tc.want != kv.Stored {
						wantLen = len(old)
					}
					if got := len(ops[2].Result.Value); got != wantLen {
						t.Fatalf("%s: value after %v: %d bytes, want %d", name, tc.kind, got, wantLen)
					}
				}
			}
		})
	}
}
