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
//     requests into one kv.Batch and call Engine.Do: one call, and at most
//     one wait per shard for its reads, per round of a connection.
//   - Do splits the batch into runs: consecutive Gets, and consecutive writes
//     to distinct keys.
//   - A Get run first reads the pending table (writes acknowledged but not
//     yet in the index; lock-free, pending.go), then posts the other keys'
//     hashes into its shard's filling search batch: one compare-and-swap
//     reserves slots in the batch's buffer (pinned or mapped memory on a
//     GPU) and the connection writes its hashes there itself (searchq.go).
//   - On the CPU engine (Options.CPUSearch "inline", the default) a Get run
//     searches the index itself instead, on its own goroutine, after the
//     pending table as above: hashindex's SearchShared lets searches run
//     concurrently and excludes them only from the scheduler's update
//     calls; the run counts as an inline reader of the shard until it has
//     acquired its items (inline.go). The hop below is the GPU's, or the
//     CPU engine's with CPUSearch "batched".
//   - Each shard's scheduler goroutine launches the filling batch when the
//     batch policy (policy.go) says: under the default load policy, once it
//     holds the jobs that arrive during one index call, or once its first
//     job has waited min(one call, C); under the fixed policy every C. On a
//     GPU the batch goes to a resident kernel that polls mapped memory
//     (hashindex.PersistentSearch: no launch, copy or driver call per
//     batch), or, with --gpu-search staged, to a staged index call. The
//     scheduler wakes each waiting connection once per batch.
//   - Back in Do, a Get run acquires each located item, compares the full key
//     (a signature match may be another key), checks expiry and flush, and
//     copies the value into the batch; the reply goes out in request order.
//   - A write run never waits for the index. Ops that read the present item
//     (cas, incr, append, delete, add, ...) find it in the pending table or
//     by a search made without the keys' locks and validated under them by
//     the pending stripes' applied counters (retried, then made under the
//     locks, when an update of the stripe completed meanwhile). Under the
//     keys' stripe locks, held only for this CPU work, kv.Apply decides each
//     op; new items are allocated (evicting by CLOCK when memory is full),
//     filled and linked, recorded in the pending table, and their index
//     updates queued on the shard (writes.go). The write is acknowledged
//     then; a client reads its own writes through the pending table.
//   - The scheduler applies queued updates in rounds (deletes, then
//     inserts), at most every max(2C, 4 update calls) under the load policy;
//     a delete of an item whose insert is still queued starts a new round.
//     Then it completes them (updates.go): locations the index dropped (an
//     overwritten key's old item, a cell pushed out by bounded cuckoo
//     displacement) are unlinked from the store, so no item is orphaned, the
//     writes' pending entries are removed and their items released.
//   - A location dropped or deleted is unlinked only once every search batch
//     delivered before the update is done with (its readers have acquired
//     their items), and every inline search in flight then (counted by
//     epoch, inline.go), so a read that located the old item still reads
//     it.
//
// Serve runs an Engine behind protocol.Server on a TCP listener and shuts
// both down cleanly when its context ends. With Options.Profile the engine
// and the protocol count where the time of requests goes ("stats
// profile", profile.go).
package server
