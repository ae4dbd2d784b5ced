// Package stm is CSMV: a multi-version software transactional memory over a
// store of 64-bit words, with a client-server commit, on the GPU and on the
// CPU.
//
// The model. A store holds N items, each a 64-bit word that keeps a ring of
// its last K versions (value, commit timestamp); a global commit clock
// counts the update transactions whose writes are visible. A transaction
// takes the clock as its snapshot when it starts and reads, for every item,
// the newest version not newer than the snapshot, so everything it reads is
// one consistent state (opacity), whether it later commits or aborts.
// Read-only transactions commit at their snapshot without validation and
// abort only when a version they need fell out of its ring (counted as
// "snapshot too old", never a wrong read). Update transactions buffer their
// writes and are validated at commit (read-write conflicts, and write-write
// conflicts of blind writes): on the GPU a server validates them against a
// log of recent commits, gives the survivors consecutive commit timestamps
// with one reservation per batch, and the clients write their versions back
// and advance the clock in commit order; on the CPU each commit validates
// itself against per-item versions (see Store). Aborts are counted by cause
// (Cause).
//
// Two engines give the same guarantees:
//
//   - Store is the CPU engine and the Go API: Atomically and ReadOnly run Go
//     closures against it, retried on conflict. Its commit costs what the
//     transaction's conflicts cost, not what the number of goroutines
//     does: a commit locks the items it wrote (a version lock per item,
//     taken in item order), takes one timestamp from the clock and
//     validates its reads against the items' versions (the role of the
//     log), so commits of disjoint items run in parallel. Replaced
//     versions go to version logs, one per few goroutines, written in
//     sequence; reads never lock and wait only for a commit at or before
//     their snapshot that is writing back an item they read.
//   - Engine runs workloads (Bank, Memcached, RMW, or a CUDA C body written
//     against the device API in stm.cuh) for a number of transactions or a
//     duration, on the GPU (client warps running transactions, server
//     blocks holding the logs in shared memory) or on the CPU engine.
//
// On the GPU, items are partitioned over Servers commit servers
// (contiguous ranges); a transaction that touches several partitions
// prepares at each in ascending order and finalizes with one timestamp, so
// that every partition's log lists commits in timestamp order.
package stm
