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
// writes and are validated at commit (read-write conflicts, and write-write
// conflicts of blind writes): on the GPU a server validates them against
// each item's newest logged write, then against the log of recent commits
// for the commits logged meanwhile, gives the survivors consecutive commit timestamps
// with one reservation per batch, and the clients write their versions back
// and advance the clock in commit order; on the CPU each commit validates
// itself against per-item versions (see Store). Aborts are counted by cause
// (Cause).
//
// Two engines give the same guarantees:
//
//   - Store (NewStore) is the CPU engine and the Go API: Atomically and ReadOnly run Go
//     closures against it, retried on conflict. Its commit costs what the
//     transaction's conflicts cost, not what the number of goroutines
//     does: a commit locks the items it wrote (a version lock per item,
//     taken in item order), takes one timestamp from the clock and
//     validates its reads against the items' versions (the role of the
//     log), so commits of disjoint items run in parallel. Replaced
//     versions go to version logs, one per few goroutines, written in
//     sequence; reads never lock and wait only for a commit at or before
//     their snapshot that is writing back an item they read.
//   - Engine (Open) runs workloads (Bank, Memcached, RMW, or a CUDA C body written
//     against the device API in stm.cuh) for a number of transactions or a
//     duration, on the GPU (client warps running transactions, server
//     blocks holding the logs in shared memory) or on the CPU engine.
//
// On the GPU, items are partitioned over Servers commit servers
// (contiguous ranges, or stripes dealt in turn: Options.Stripe); a
// transaction that touches several partitions
// prepares at each in ascending order and finalizes with one timestamp, so
// that every partition's log lists commits in timestamp order.
//
// Under hot items (a Zipf law) thousands of transactions in flight mostly
// conflict: the GPU engine admits client warps by the measured abort rate
// (Options.Throttle): every warp reports each round's attempts and aborts
// to one window counter, and the warp that fills a window admits a
// quarter fewer warps when the window's abort rate was above the target
// and 1/32 of them more when it was below; the warps left out sleep,
// holding the tickets of the attempts they lost, and retry them once
// admitted again (or once every ticket is taken). Every guarantee holds
// whatever warps run; ServerStats.Admitted says how many threads did.
// Options.Contention acts on the conflicting transactions instead: with
// ContentionCheck an update transaction whose items were written after its
// snapshot (the servers' newest logged write of each) aborts before it
// asks a server; with ContentionClaims it also claims the items it writes
// (one compare-and-swap each) and is held back unsent, and run again,
// while another transaction holds one (ServerStats.Deferred). Servers
// validate every request as before, so the guarantees are the same.
// Options.Refresh (on for a skewed workload that does not chain) retries an update attempt in
// place when, after its warp's bodies, an item it accessed was written
// after its snapshot: the attempt aborts (counted, recorded), the warp
// waits for that write to be published, and the body runs again from a
// new snapshot before the warp commits (ServerStats.Refreshed).
// Options.ServerCommit gives the servers more of a single-partition
// commit: with ServerCommitWriteBack a server writes the versions back
// and marks the timestamps done after the final check, before its reply;
// with ServerCommitRetry it also runs a conflicting update attempt again
// itself (after the clock passes the writes it met) before the request's
// turn, validated as any attempt (ServerStats.Rerun). Direct commits
// (Options.Commit: CommitDirect, and CommitAuto's choice below 95%
// read-only when no transaction writes more than AutoDirectWrites items
// and no server option is set) do without the servers: each client lane
// locks the items it writes, takes a timestamp, validates its reads
// against the locks and the newest writes, installs and unlocks (TL2's
// commit over these versions; on an H200 1.66x-1.84x the servers' rate at
// 0% read-only of uniform accounts). Result.Direct says which path a run
// took. With direct commits, Options.Chain (on by default for a skewed
// workload of small write sets, below 70% read-only) runs an update attempt that
// lost inside its warp, or to a newer write (or, in a round whose bodies
// were long, was held back at its locks), again in the same round: the
// lane locks the items it wrote, takes its timestamp and runs its body on
// the state just before that timestamp (every read checked against the
// item's lock and newest write), so that it commits without a further
// validation (ServerStats.Chained, ChainCommits; on an H200 1.46x the
// commits a second at 0% read-only of 64K accounts under Zipf 0.99).
// Options.Migrate (on by default where attempts chain by default, for
// write sets of 3 items or more) moves a transaction held back at a lock
// another warp's lane holds, or lost with a chained claim that met one, to
// that warp, where the in-warp check and the
// chained attempts order the transactions on the same hot items
// (ServerStats.Migrated; on an H200 1.12x the commits a second of 2-round
// transfers at 0% read-only under Zipf 0.99).
//
// # Your own transactions on the GPU
//
// A CUDA workload is a transaction body in CUDA C, compiled with NVRTC into
// the engine's kernels and run by every client thread, one transaction at a
// time, retried on abort. This body (stm/testdata/transfer.cu) moves 1
// between two items of a block of 8, or, with the read-only share given in
// parameter 0, sums a block, whose total must not change:
//
//	__device__ void stm_body(stm_tx* tx) {
//		const u64 blocks = stm_items(tx) / 8;
//		const bool ro = stm_below(tx, 1000000) < stm_param(tx, 0);
//		stm_begin(tx, ro);                   // first: the snapshot
//		const u32 base = (u32)(stm_below(tx, blocks) * 8);
//		if (ro) {
//			u64 sum = 0;
//			for (u32 i = 0; i < 8; i++) sum += stm_read(tx, base + i);
//			if (stm_failed(tx)) return;      // lost: it will be retried
//			stm_check(tx, sum == 8 * stm_param(tx, 1));
//			return;
//		}
//		const u32 from = base + (u32)stm_below(tx, 8);
//		const u32 to = base + (u32)((from - base + 1 + stm_below(tx, 7)) % 8);
//		const u64 a = stm_read(tx, from);
//		if (stm_failed(tx)) return;
//		if (a == 0) {
//			stm_abort(tx);                   // give up: not retried
//			return;
//		}
//		stm_write(tx, from, a - 1);          // buffered until commit
//		stm_write(tx, to, stm_read(tx, to) + 1);
//	}
//
// The rules (stm.cuh has the whole device API): call stm_begin first; draw
// every random number from stm_rand, stm_below or stm_unit, which repeat
// on a retry; return once stm_failed says the attempt is lost; stay within
// the read and write sets the workload declares. A body that reads several
// items before it writes (a sum, a scan, both sides of a transfer) can read
// them with stm_read_many(tx, items, n, out), which returns what n calls of
// stm_read would with the loads of up to eight items in flight together:
// a read costs four round trips to the GPU's L2 cache one after another,
// so a sum of 100 items runs several times faster. From Go:
//
//	w := stm.CUDA{Label: "transfer", Body: body, Size: 1 << 20,
//		Init:  func(int) uint64 { return 100 },
//		Param: []uint64{900000, 100}, // 90% read-only; the initial value
//		MaxReads: 8, MaxWrites: 2, MaxReadOnlyReads: 8}
//	res, err := eng.Run(w, stm.RunOptions{Duration: time.Second})
//
// and from the command line, which compiles the body first (its errors
// name the file's lines), runs it on the GPU and checks opacity of every
// attempt and the serial replay of the committed history (--check=false
// skips the check and its recording, for throughput):
//
//	warpkv stm run --body transfer.cu --items 1000000 --init 100 --param 100 \
//		--read-only 90 --threads 65536 --duration 1s
//
// It prints the commits (update and read-only), the aborts by cause, the
// transactions given up, commits/s, the committed transactions that
// failed stm_check, and the two checks' verdicts; it exits 1 if any check
// fails. Checked, a run ends when the GPU's history buffer is full: on an
// H200 this command commits 34.4M transactions in 0.16 s and takes about
// 4 s in all (about 1.8 s to read and decode the recorded attempts, 1.2 to
// 1.3 s for the checks, each part printed on stderr; about 10 GB of host
// memory at its peak); with --check=false it
// runs the whole second (221M commits/s) and takes 1.5 s in all.
package stm
