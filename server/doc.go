// Package server is warpkv's Mega-KV key-value engine and memcached server.
//
// Engine implements kv.Cache. Items live in an itemstore.Store (slabs off the
// Go heap, CLOCK eviction under a hard memory cap); their index is a
// hashindex.Index per shard: one shard per usable GPU (keys sharded by a mix
// of their hash), or one CPU-engine shard where no GPU is usable. The index
// maps a key's 64-bit hash to the 32-bit location of its item.
//
// The pipeline, after the Mega-KV paper:
//
//   - Connection goroutines (package protocol) parse a connection's pipelined
//     requests into one kv.Batch and call Engine.Do.
//   - Do splits the batch into runs: consecutive Gets, and consecutive writes
//     to distinct keys. A run hashes its keys and queues one search request
//     per shard, then waits.
//   - Each shard's scheduler goroutine launches every queued search as one
//     index batch at most every batch interval C, and every queued delete and
//     insert as one update batch at most every 2C, or early when a queue
//     reaches MaxBatch jobs. One goroutine calls the index, so searches never
//     overlap updates: a present key is always found.
//   - Back in Do, a Get run acquires each located item, compares the full key
//     (a signature match may be another key), checks expiry and flush, and
//     copies the value into the batch; the reply goes out in request order.
//   - A write run holds its keys' stripe locks from its search to its
//     update's completion, so writes to a key are serialized (cas, incr and
//     append are atomic). kv.Apply decides each op; new items are allocated
//     (evicting by CLOCK when memory is full), filled and linked, and one
//     update request per shard deletes removed and evicted entries, then
//     inserts the new ones. Do returns only once the index holds every write:
//     a client reads its own writes.
//   - Every location the index drops (an overwritten key's old item, a cell
//     pushed out by bounded cuckoo displacement) comes back from the insert
//     and is unlinked from the store, so no item is orphaned; the drops are
//     counted in stats.
//
// Serve runs an Engine behind protocol.Server on a TCP listener and shuts
// both down cleanly when its context ends.
package server
