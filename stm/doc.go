// Package stm is CSMV: a multi-version software transactional memory over a
// store of 64-bit words, with a client-server commit, on the GPU and on the
// CPU.
//
//	e, err := stm.Open(stm.Options{Device: "auto"}) // an Engine: whole workloads
//	defer e.Close()
//	res, err := e.RunContext(ctx, stm.Bank{Accounts: 1000, Initial: 10}, stm.RunOptions{Transactions: 1e6})
//
//	s, err := stm.NewStore(stm.StoreOptions{Items: 3}) // a Store: transactions as Go closures
//	err = s.Atomically(func(tx *stm.Tx) error { tx.Write(0, tx.Read(0)+1); return nil })
//
// After an Engine's Close every call returns an error matching
// engine.ErrClosed.
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
// writes; at commit a server validates them against a log of recent commits
// (read-write conflicts, and write-write conflicts of blind writes), gives
// the survivors consecutive commit timestamps with one reservation per
// batch, and the clients write their versions back and advance the clock in
// commit order. Aborts are counted by cause (Cause).
//
// Two engines give the same guarantees:
//
//   - Store (NewStore) is the CPU engine and the Go API: Atomically and
//     ReadOnly run Go closures against it, retried on conflict. Its commit follows CSMV on
//     the CPU: committing goroutines queue requests at a partition's commit
//     server, and whichever of them finds the server idle takes its role
//     and validates the whole queue as one batch against the partition's
//     log (flat combining); there is no lock around the transactions
//     themselves.
//   - Engine (Open) runs workloads (Bank, Memcached, RMW, or a CUDA C body written
//     against the device API in stm.cuh) for a number of transactions or a
//     duration, on the GPU (client warps running transactions, server
//     blocks holding the logs in shared memory) or on the CPU engine.
//
// Items are partitioned over Servers commit servers (contiguous ranges); a
// transaction that touches several partitions locks their servers in
// ascending order (CPU) or prepares at each in ascending order and
// finalizes with one timestamp (GPU), so that every partition's log lists
// commits in timestamp order.
package stm
