package hashindex

import "github.com/cespare/xxhash/v2"

// Hash returns the 64-bit hash that represents key in the index (XXH64 with
// seed 0). Callers hash each key once and pass the hash to Search, Insert and
// Delete; the index derives the key's signature and buckets from it. Cost:
// about one nanosecond per 8 bytes of key.
func Hash(key []byte) uint64 { return xxhash.Sum64(key) }
