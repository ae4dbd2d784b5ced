// stm/stm.cuh: the device API of warpkv's CSMV engine. A transaction body
// is CUDA C written against it:
//
//   __device__ void stm_body(stm_tx* tx) {
//       stm_begin(tx, read_only);        // first: takes the snapshot
//       u64 v = stm_read(tx, item);      // the item as of the snapshot
//       stm_write(tx, item, v + 1);      // buffered until commit
//       if (stm_failed(tx)) return;      // the attempt is lost: stop early
//   }
//
// The engine's client kernel calls stm_body for a transaction ticket, then
// commits the transactions of the whole warp together (stm_commit_warp in
// commit.cu: pre-validation in the warp, one request per server, write-back,
// the clock advanced in commit order) and calls the body again for the
// same ticket if the attempt aborted. Everything a body draws must come
// from stm_rand/stm_below/stm_unit, which repeat on every retry. stm_abort
// gives a transaction up (not retried); stm_check(tx, false) marks it as
// seeing a wrong state (counted when it commits). After a failed read or
// write (stm_failed), reads return 0 and writes are ignored; the attempt
// will not commit.
#pragma once
#include "warpkv/types.cuh"
#include "warpkv/order.cuh"
#include "stm/globals.cuh"

// Strong accesses of global memory (ld_acquire_gpu, st_release_gpu, ...;
// system scope for the mapped control words) and globaltimer_ns are
// warpkv/order.cuh's.

// ---- the transaction ------------------------------------------------------

// STM_CLAIM_BATCH is the largest write set whose claims stm_claim sends
// together, and whose lock words a chained attempt keeps in stm_tx.cw.
#define STM_CLAIM_BATCH 4

struct stm_tx {
	const stm_globals* g;
	u64 snap;    // snapshot timestamp (after stm_begin)
	u64 ticket;  // the transaction's number in the run
	u64 rng;     // generator state, reseeded from the ticket on every attempt
	u64 pmask;   // partitions (servers) the update transaction touched
	u32 tid;     // client thread index
	u32 thread;  // = tid, or a migrated ticket's first lane's (STM_MIGRATE: two tickets in flight may share it); threads = number of client threads
	u32 threads;
	u32 nr, nw;  // reads recorded, writes buffered
	u32 ro;      // read-only
	u32 begun;
	u32 state;   // STM_ST_OK, STM_ST_ABORT + cause, STM_ST_USER or an error
	u32 detail;  // an error's item or capacity
	u32 bad;     // the workload's check failed
	u32 calls;   // accesses so far: every 1024th checks the deadline
	u64 deadline; // the run's deadline (global timer, ns)
	// Contention management (commit.cu, stm_contend): claim slots this
	// thread holds, whether it keeps them over this attempt's abort, the
	// attempts held back in a row, and the clock the next attempt waits
	// for (the newest logged write it found, 0: none).
	u32 held, keep, defers;
	u64 need;
	// The holder (tid + 1) of the word this attempt's last claim failed on
	// (0: none, or that claim succeeded; stm_claim): with STM_MIGRATE the
	// ticket moves to its warp.
	u32 holder;
	// A chained attempt's commit timestamp (client.cu, stm_chain_begin;
	// 0: an ordinary attempt): it holds the locks of its write items and
	// reads the state just before that timestamp (stm_chain_look).
	u64 chain;
	// A chained attempt's lock words (item & claim_mask, ~0u past cwn;
	// stm_chain_begin): it reads an item under one of them without
	// stm_chain_look (stm_chain_own).
	u32 cw[STM_CLAIM_BATCH], cwn;
#if STM_RETRY
	// A client attempt whose sets a server's re-run overwrote before the
	// server dropped the re-run (Options.ServerCommit retry): counted as
	// an abort, not recorded.
	u32 lost;
#endif
};

__device__ __forceinline__ u64 stm_mix(u64 x) {
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}
// The generator of ticket in a run seeded seed: SplitMix64, as stm/rng.go.
__device__ __forceinline__ u64 stm_seed(u64 seed, u64 ticket) {
	return stm_mix(seed + 0x9E3779B97F4A7C15ull) ^ stm_mix(ticket * 0xD6E8FEB86659FD93ull + 1);
}
// stm_rand returns the next 64 random bits of the transaction.
__device__ __forceinline__ u64 stm_rand(stm_tx* tx) {
	tx->rng += 0x9E3779B97F4A7C15ull;
	return stm_mix(tx->rng);
}
// stm_below returns a uniform number in [0, n).
__device__ __forceinline__ u64 stm_below(stm_tx* tx, u64 n) { return __umul64hi(stm_rand(tx), n); }
// stm_unit returns a uniform double in [0, 1).
__device__ __forceinline__ double stm_unit(stm_tx* tx) {
	return (double)(stm_rand(tx) >> 11) * (1.0 / 9007199254740992.0);
}
// stm_items returns N, the store's items (a body uses items 0 to N-1).
__device__ __forceinline__ u64 stm_items(const stm_tx* tx) { return tx->g->n_items; }
// stm_param returns workload parameter i.
__device__ __forceinline__ u64 stm_param(const stm_tx* tx, int i) { return tx->g->params[i]; }
// stm_param_double returns parameter i as the bits of a double.
__device__ __forceinline__ double stm_param_double(const stm_tx* tx, int i) {
	return __longlong_as_double((long long)tx->g->params[i]);
}

__device__ __forceinline__ void stm_fail(stm_tx* tx, u32 state, u32 detail) {
	if (tx->state == STM_ST_OK) {
		tx->state = state;
		tx->detail = detail;
	}
}
// stm_failed reports whether the attempt can no longer commit.
__device__ __forceinline__ bool stm_failed(const stm_tx* tx) { return tx->state != STM_ST_OK; }
// stm_abort gives the transaction up: it is neither committed nor retried.
__device__ __forceinline__ void stm_abort(stm_tx* tx) { stm_fail(tx, STM_ST_USER, 0); }
// stm_check records a workload check: a transaction that commits after
// stm_check(tx, false) is counted as wrong.
__device__ __forceinline__ void stm_check(stm_tx* tx, bool ok) {
	if (!ok) tx->bad = 1;
}

// stm_deadline_passed is checked on every 1024th access: a body that keeps
// reading or writing past the run's deadline fails with STM_ERR_DEADLINE
// (a body must return once stm_failed says so); once a run of a duration
// is told to stop, a long transaction is abandoned (STM_ST_STOP).
__device__ __forceinline__ bool stm_deadline_passed(stm_tx* tx) {
	if ((++tx->calls & 1023) != 0) return false;
	if (ld_relaxed_gpu(&((const u64*)tx->g->dctl)[DCTL_STOP]) != 0) {
		stm_fail(tx, STM_ST_STOP, 0);
		return true;
	}
	if (globaltimer_ns() <= tx->deadline) return false;
	stm_fail(tx, STM_ERR_DEADLINE, STM_AT_RUN);
	return true;
}

// stm_partition returns the server whose partition holds item: contiguous
// partitions of part_size items, or, in a program compiled with
// STM_STRIPES 1, stripes of stripe items dealt to the servers in turn
// (Options.Stripe).
__device__ __forceinline__ u32 stm_partition(const stm_globals* g, u32 item) {
#if STM_STRIPES
	return (u32)(item / (u32)g->stripe % (u32)g->servers);
#else
	return (u32)(item / (u32)g->part_size);
#endif
}

// stm_begin starts the attempt: a read-only transaction when read_only.
// It takes the snapshot: the commit clock, whose versions are all back.
// A chained attempt (tx->chain) takes the timestamp before its own.
__device__ __forceinline__ void stm_begin(stm_tx* tx, bool read_only) {
	tx->ro = read_only ? 1 : 0;
	tx->begun = 1;
#if STM_CHAIN
	if (tx->chain) {
		tx->snap = tx->chain - 1;
		return;
	}
#endif
	tx->snap = ld_acquire_gpu((const u64*)tx->g->clock);
}

#if STM_CHAIN
// stm_chain_bad reports whether a chained attempt (tx->chain, its commit
// timestamp, taken after it locked its write items) may not read item
// at tx->snap = chain - 1, given the item's lock word c (claims, loaded
// first) and newest write w (wts, loaded after a fence): a lock another
// lane holds (its holder may have taken a timestamp below ours and not
// yet raised wts), or a newest write at or above our timestamp (that
// version is not ours to see, and the ones below it may be gone). Why
// the rest may be read at chain - 1 although the clock may be far below
// it: every commit of the item with a timestamp below ours locked it
// before we took ours, so it still holds the lock when we look (c) or
// released it after raising wts and installing its version (w, seen
// after the fence that follows the look); so every version of the item
// at or below chain - 1 is installed, and a later commit's is above it.
// The whole view is then the state just before chain: a chained attempt
// sees a consistent state (opacity) and commits at chain without a
// further validation.
// stm_chain_held reports whether lock word c names another lane than tx's.
__device__ __forceinline__ bool stm_chain_held(const stm_tx* tx, u32 c) { return c != 0u && c != tx->tid + 1; }
__device__ __forceinline__ bool stm_chain_bad(const stm_tx* tx, u32 c, u64 w) { return stm_chain_held(tx, c) || w >= tx->chain; }

// stm_chain_fail fails a chained attempt that stm_chain_bad turned from
// item (lock word c): read-write, on a held lock (STM_AB_LOCK_MET) or a
// newer write.
__device__ __forceinline__ void stm_chain_fail(stm_tx* tx, u32 c) {
	stm_fail(tx, STM_ST_ABORT + STM_READ_WRITE, stm_chain_held(tx, c) ? STM_AB_LOCK_MET : 0);
}

// stm_chain_own reports whether a chained attempt holds the lock word of
// item (tx->cw): then it may read the item at chain - 1 with no look and
// no version check (stm_read_many). Why: every commit of the item with a
// timestamp below ours released that word after raising wts and
// installing its version, before our claim took it (a release seen by
// our compare-and-swap, ordered by the fences on both sides: theirs
// before the release, ours in stm_take_timestamps), and no later one can
// lock it until our commit has released it; so the item's newest
// installed version, at its head slot, is its state just before chain,
// and no writer touches its ring while we read. Cost: compares only.
__device__ __forceinline__ bool stm_chain_own(const stm_tx* tx, u32 item) {
	const u32 w = item & (u32)tx->g->claim_mask;
	bool in = false;
#pragma unroll
	for (u32 q = 0; q < STM_CLAIM_BATCH; q++) in |= q < tx->cwn && tx->cw[q] == w;
	return in;
}

// stm_chain_look checks that a chained attempt may read item
// (stm_chain_bad): its lock word, a fence, its newest write. false: the
// attempt failed. Cost: two loads through L2 and a fence.
__device__ __forceinline__ bool stm_chain_look(stm_tx* tx, u32 item) {
	const stm_globals* g = tx->g;
	const u32 c = ld_relaxed_gpu((const u32*)g->claims + (item & (u32)g->claim_mask));
	fence_acq_rel_gpu();
	if (stm_chain_bad(tx, c, ld_relaxed_gpu((const u64*)g->wts + item))) {
		stm_chain_fail(tx, c);
		return false;
	}
	return true;
}
#endif

// stm_ring_scan is the slow path's fallback (stm_ring_back met a slot
// being reused): all K slots are scanned,
// each read as (version, value, version), and the chosen one checked again
// at the end: versions of an item grow and leave the ring oldest first, so
// a choice still present at the end missed no newer version <= snap.
// false: the ring no longer holds that version.
__device__ __noinline__ bool stm_ring_scan(const u64* vers, const u64* vals, u32 k, u64 snap, u64* out) {
	for (int attempt = 0; attempt < 4; attempt++) {
		int best = -1;
		u64 bv = 0, bx = 0;
		for (u32 j = 0; j < k; j++) {
			u64 a = ld_acquire_gpu(vers + j);
			if (a > snap || (best >= 0 && a <= bv)) continue; // STM_NO_VERSION > any snapshot
			u64 x = ld_acquire_gpu(vals + j);
			if (ld_relaxed_gpu(vers + j) != a) continue; // being overwritten: leaving the ring
			best = j;
			bv = a;
			bx = x;
		}
		if (best < 0) return false;
		if (ld_relaxed_gpu(vers + best) == bv) {
			*out = bx;
			return true;
		}
	}
	return false;
}

// stm_ring_back is stm_ring_read's slow path: the slots from the head h
// back to the oldest, newest first, each read as (version, value,
// version); the first whose version is at or below snap and reads the
// same twice is the item's at snap. Why the first: the ring holds an
// item's versions in install order, and a writer reuses the oldest slot
// (marks it empty, fences, then stores): a slot newer than the one found
// that held a version at or below snap could only have been reused after
// the one found, which would then no longer read as it did. Versions
// installed after the snapshot are above snap (the clock passes a
// timestamp only after its write-back), so they are skipped. Cost: one
// acquiring load a slot passed, three for the one found (the full scan,
// stm_ring_scan, loaded every slot: under hot items, where the head is
// often newer than a reader's snapshot, that was K dependent loads and
// more a read). A slot that changes between its two reads sends the read
// to stm_ring_scan. from: the slots already passed (1: the head's version
// was read above snap). false: the ring no longer holds that version.
__device__ __noinline__ bool stm_ring_back(const u64* vers, const u64* vals, u32 k, u32 h, u32 from, u64 snap, u64* out) {
	for (u32 s = from; s < k; s++) {
		const u32 j = h >= s ? h - s : h + k - s;
		const u64 a = ld_acquire_gpu(vers + j);
		if (a > snap) continue; // STM_NO_VERSION > any snapshot
		const u64 x = ld_acquire_gpu(vals + j);
		if (ld_relaxed_gpu(vers + j) != a) return stm_ring_scan(vers, vals, k, snap, out);
		*out = x;
		return true;
	}
	return false;
}

// stm_ring_read finds item's value at snapshot snap: the version with the
// largest timestamp not above snap. Fast path: the newest slot (head)
// holds it, read as (version, value, version) with two acquiring loads
// (each costs the SM an L1 invalidation); otherwise stm_ring_back.
__device__ __forceinline__ bool stm_ring_read(const stm_globals* g, u32 item, u64 snap, u64* out) {
	const u32 k = (u32)g->k;
	const u64* vers = (const u64*)g->vers + (u64)item * k;
	const u64* vals = (const u64*)g->vals + (u64)item * k;
	// The head needs no acquire: it is read after the snapshot's acquire
	// and gives the address of what follows.
	const u32 h = ld_relaxed_gpu((const u32*)g->head + item);
	const u64 v1 = ld_acquire_gpu(vers + h);
	if (v1 <= snap) {
		const u64 x = ld_acquire_gpu(vals + h);
		if (ld_relaxed_gpu(vers + h) == v1) {
			*out = x;
			return true;
		}
	}
	return stm_ring_back(vers, vals, k, h, v1 > snap ? 1 : 0, snap, out);
}

// stm_read_ok runs the checks every read makes before it loads: the attempt
// still live, the deadline (stm_deadline_passed), stm_begin called, the
// item in range. false: the read returns 0 (the attempt fails, if it had
// not yet).
__device__ __forceinline__ bool stm_read_ok(stm_tx* tx, u32 item) {
	if (tx->state != STM_ST_OK || stm_deadline_passed(tx)) return false;
	if (!tx->begun) {
		stm_fail(tx, STM_ERR_NO_BEGIN, 0);
		return false;
	}
	if ((u64)item >= tx->g->n_items) {
		stm_fail(tx, STM_ERR_ITEM, item);
		return false;
	}
	return true;
}

// ---- a client thread's read and write sets ---------------------------------
//
// A transaction's read items, write items and written values live in the
// client thread's rows of rs_item, ws_item and ws_val (global memory: the
// servers, the history and the host read them). With direct commits
// (STM_DIRECT: no server reads them) the first STM_SET_SMEM entries of
// each are also kept in shared memory (stm_mirror_ri, _wi and _wv, one
// column per thread of the client block), where the commit's many reads of a small set cost no
// round trip to L2: every fence and acquiring load of the commit protocol
// empties the SM's L1, so a row read back from global memory came from L2
// each time (H200, 2026-11-30, 64K accounts under Zipf 0.99 at 0%
// read-only: validation 1.46 -> 0.94 µs and write-back 1.97 -> 1.66 µs of
// a warp round; 1.06x the commits a second, 1.19x with 2-round
// transfers). Stores go to both; reads of an entry below STM_SET_SMEM go
// to the mirror. STM_SET_SMEM (Go-owned: stm/layout_gpu.go, setMirror) is
// 4 for client blocks of up to 256 threads, fewer for larger ones.
#if STM_DIRECT
// The mirror is laid out entry-major ([entry][thread]): the lanes of a warp
// reading entry j of their own sets together read 32 consecutive words, one
// per bank (a thread-major array of 64-byte slots put 16 lanes on one bank).
__shared__ u32 stm_mirror_ri[STM_SET_SMEM][STM_CLIENT_BLOCK];
__shared__ u32 stm_mirror_wi[STM_SET_SMEM][STM_CLIENT_BLOCK];
__shared__ u64 stm_mirror_wv[STM_SET_SMEM][STM_CLIENT_BLOCK];
#endif

// stm_set_row reads a client thread's read or write items by index: j below
// STM_SET_SMEM from the mirror sh (direct commits), else from its row.
struct stm_set_row {
	const u32* row;
	const u32* sh; // direct commits: the thread's entry 0 of the mirror of these items, STM_CLIENT_BLOCK words apart (else unused)
	__device__ __forceinline__ u32 operator[](u32 j) const {
#if STM_DIRECT
		if (j < STM_SET_SMEM) return sh[j * STM_CLIENT_BLOCK];
#endif
		return row[j];
	}
};

// stm_set_row_of returns client thread tid's row of the per-thread rows of
// cap items at rows, with its mirror of the write items (writes) or of the
// read items.
__device__ __forceinline__ stm_set_row stm_set_row_of(u64 rows, u64 cap, u32 tid, bool writes) {
	const u32* row = (const u32*)rows + (u64)tid * (u32)cap;
#if STM_DIRECT
	const u32 t = tid % STM_CLIENT_BLOCK;
	return stm_set_row{row, writes ? &stm_mirror_wi[0][t] : &stm_mirror_ri[0][t]};
#else
	return stm_set_row{row, nullptr};
#endif
}

// stm_rs_items and stm_ws_items return client thread tid's read and
// write items (stm_set_row).
__device__ __forceinline__ stm_set_row stm_rs_items(const stm_globals* g, u32 tid) { return stm_set_row_of(g->rs_item, g->r_cap, tid, false); }
__device__ __forceinline__ stm_set_row stm_ws_items(const stm_globals* g, u32 tid) { return stm_set_row_of(g->ws_item, g->w_cap, tid, true); }

// stm_ws_value returns client thread tid's written value j.
__device__ __forceinline__ u64 stm_ws_value(const stm_globals* g, u32 tid, u32 j) {
#if STM_DIRECT
	if (j < STM_SET_SMEM) return stm_mirror_wv[j][tid % STM_CLIENT_BLOCK];
#endif
	return ((const u64*)g->ws_val)[(u64)tid * (u32)g->w_cap + j];
}

// stm_own_write finds an update transaction's own last write to item
// (*v, true); a read-only one has none. Cost: one look at each buffered
// write.
__device__ __forceinline__ bool stm_own_write(const stm_tx* tx, u32 item, u64* v) {
	if (tx->ro) return false;
	const stm_globals* g = tx->g;
	const stm_set_row wi = stm_ws_items(g, tx->tid);
	for (u32 j = 0; j < tx->nw; j++)
		if (wi[j] == item) {
			*v = stm_ws_value(g, tx->tid, j);
			return true;
		}
	return false;
}

// stm_read_note records a read of item that the ring gave (value v) in the
// read set (update transactions, and any with a history) and its partition
// (update transactions). false: the read set is full; the attempt failed.
__device__ __forceinline__ bool stm_read_note(stm_tx* tx, u32 item, u64 v) {
	const stm_globals* g = tx->g;
	if (!tx->ro || g->hist_mode) {
		if (tx->nr == (u32)g->r_cap) {
			stm_fail(tx, STM_ERR_READS, (u32)g->r_cap);
			return false;
		}
		u64 at = (u64)tx->tid * (u32)g->r_cap + tx->nr;
		((u32*)g->rs_item)[at] = item;
#if STM_DIRECT
		if (tx->nr < STM_SET_SMEM) stm_mirror_ri[tx->nr][tx->tid % STM_CLIENT_BLOCK] = item;
#endif
		if (g->hist_mode) ((u64*)g->rs_val)[at] = v;
		tx->nr++;
		if (!tx->ro) tx->pmask |= 1ull << stm_partition(g, item);
	}
	return true;
}

// stm_read returns item as of the snapshot, or the transaction's own
// last write to it. Cost: four dependent loads through L2 when the item's
// newest slot holds its version (stm_ring_read); stm_read_many overlaps
// the loads of several items.
__device__ __forceinline__ u64 stm_read(stm_tx* tx, u32 item) {
	if (!stm_read_ok(tx, item)) return 0;
	u64 v;
	if (stm_own_write(tx, item, &v)) return v;
#if STM_CHAIN
	if (tx->chain && !stm_chain_own(tx, item) && !stm_chain_look(tx, item)) return 0;
#endif
	if (!stm_ring_read(tx->g, item, tx->snap, &v)) {
		stm_fail(tx, STM_ST_ABORT + STM_TOO_OLD, item);
		return 0;
	}
	return stm_read_note(tx, item, v) ? v : 0;
}

// stm_read_many reads items[0..n) into out[0..n) as n calls of stm_read in
// that order would (own writes, the read set, a failed attempt's reads
// 0), except that each chunk of STM_READ_MANY items is checked
// (stm_read_ok) before any of it is loaded. The loads of a chunk are in
// flight together: the items' heads, then each newest slot's version and
// value at once, one fence (fence_acq_rel_gpu), and the versions again:
// three round trips to L2 for the chunk where stm_read takes four for
// each item. A version at or below the snapshot that reads the same twice
// is the item's at the snapshot: the snapshot's acquire of the clock made
// that version's value and head visible (the clock passes a timestamp
// only after its write-back), and a later writer of the slot marks it
// empty, then fences, then stores its value, so a value read before the
// fence that is not the version's makes the second read differ. The items
// whose newest version is above the snapshot then walk back together, two
// round trips a slot for the chunk (below); the few whose slot changed
// under them take stm_ring_back or stm_ring_scan, in order.
__device__ __forceinline__ void stm_read_many(stm_tx* tx, const u32* items, u32 n, u64* out) {
	const stm_globals* g = tx->g;
	const u32 k = (u32)g->k;
	const u64 snap = tx->snap;
	const u32* head = (const u32*)g->head;
	const u64* vers = (const u64*)g->vers;
	const u64* vals = (const u64*)g->vals;
	for (u32 base = 0; base < n; base += STM_READ_MANY) {
		const u32 c = min(n - base, (u32)STM_READ_MANY);
		u32 it[STM_READ_MANY], h[STM_READ_MANY];
		u64 v1[STM_READ_MANY], x[STM_READ_MANY];
		u32 stop = c, ring = 0; // the first item that failed its checks; the items to load
		u32 own = 0;            // a chained attempt's items under its own lock words (stm_chain_own)
#pragma unroll
		for (u32 i = 0; i < STM_READ_MANY; i++) {
			if (i >= c) break;
			it[i] = items[base + i]; // out[base + i]: an own write or the ring's value below, or 0 once the attempt failed
		}
#pragma unroll
		for (u32 i = 0; i < STM_READ_MANY; i++) {
			if (i >= stop) break;
			if (!stm_read_ok(tx, it[i])) {
				stop = i;
				break;
			}
			if (!stm_own_write(tx, it[i], &out[base + i])) ring |= 1u << i;
		}
#if STM_CHAIN
		// A chained attempt checks the chunk's items first (stm_chain_look,
		// the loads in flight together), except those under its own lock
		// words (stm_chain_own): reads stop at the first it may not read.
		if (tx->chain && ring) {
#pragma unroll
			for (u32 i = 0; i < STM_READ_MANY; i++)
				if (((ring >> i) & 1) && stm_chain_own(tx, it[i])) own |= 1u << i;
		}
		if (tx->chain && (ring & ~own)) {
			const u32 look = ring & ~own;
			u32 cl[STM_READ_MANY];
			u64 wt[STM_READ_MANY];
#pragma unroll
			for (u32 i = 0; i < STM_READ_MANY; i++)
				if ((look >> i) & 1) cl[i] = ld_relaxed_gpu((const u32*)g->claims + (it[i] & (u32)g->claim_mask));
			fence_acq_rel_gpu();
#pragma unroll
			for (u32 i = 0; i < STM_READ_MANY; i++)
				if ((look >> i) & 1) wt[i] = ld_relaxed_gpu((const u64*)g->wts + it[i]);
#pragma unroll
			for (u32 i = 0; i < STM_READ_MANY; i++)
				if (((look >> i) & 1) && stm_chain_bad(tx, cl[i], wt[i])) {
					stm_chain_fail(tx, cl[i]);
					stop = i;
					ring &= (1u << i) - 1;
					break;
				}
		}
#endif
#pragma unroll
		for (u32 i = 0; i < STM_READ_MANY; i++)
			if ((ring >> i) & 1) h[i] = ld_relaxed_gpu(head + it[i]);
#pragma unroll
		for (u32 i = 0; i < STM_READ_MANY; i++)
			if ((ring >> i) & 1) {
				const u64 at = (u64)it[i] * k + h[i];
				v1[i] = ld_relaxed_gpu(vers + at);
				x[i] = ld_relaxed_gpu(vals + at);
			}
		u32 fast = 0, back = 0, scan = 0; // found; walking back; to stm_ring_scan
		// An item under the chained attempt's own lock word whose head
		// holds a version at or below the snapshot is found: no writer can
		// be reusing its slots (stm_chain_own), so no second look and no
		// fence for it.
#pragma unroll
		for (u32 i = 0; i < STM_READ_MANY; i++)
			if (((own >> i) & 1) && v1[i] <= snap) fast |= 1u << i;
		if (ring & ~fast) fence_acq_rel_gpu();
#pragma unroll
		for (u32 i = 0; i < STM_READ_MANY; i++) {
			if (!((ring >> i) & 1) || ((fast >> i) & 1)) continue;
			if (v1[i] > snap)
				back |= 1u << i;
			else if (ld_relaxed_gpu(vers + (u64)it[i] * k + h[i]) == v1[i])
				fast |= 1u << i;
		}
		// The items whose newest version is above the snapshot walk their
		// rings back from the head together: step s loads slot h - s of
		// each (version and value at once), one fence, then the versions
		// again, as above; the first slot at or below snap that reads the
		// same twice is the item's (stm_ring_back's rule, whose walk takes
		// a round trip a slot passed and three for the one found, item
		// after item: under hot items a chunk's heads are mostly newer
		// than a long reader's snapshot). One that read differently goes
		// to stm_ring_scan; one still walking after k - 1 steps is gone.
		for (u32 s = 1; back && s < k; s++) {
#pragma unroll
			for (u32 i = 0; i < STM_READ_MANY; i++)
				if ((back >> i) & 1) {
					const u64 at = (u64)it[i] * k + (h[i] >= s ? h[i] - s : h[i] + k - s);
					v1[i] = ld_relaxed_gpu(vers + at);
					x[i] = ld_relaxed_gpu(vals + at);
				}
			fence_acq_rel_gpu();
#pragma unroll
			for (u32 i = 0; i < STM_READ_MANY; i++)
				if (((back >> i) & 1) && v1[i] <= snap) {
					const u64 at = (u64)it[i] * k + (h[i] >= s ? h[i] - s : h[i] + k - s);
					if (ld_relaxed_gpu(vers + at) == v1[i])
						fast |= 1u << i;
					else
						scan |= 1u << i;
					back &= ~(1u << i);
				}
		}
#pragma unroll
		for (u32 i = 0; i < STM_READ_MANY; i++) {
			if (i >= stop) break;
			if (!((ring >> i) & 1)) continue;
			u64 v = x[i];
			bool found = (fast >> i) & 1;
			if (!found && !((back >> i) & 1)) { // back: the walk passed every slot
				const u64* iv = vers + (u64)it[i] * k;
				const u64* ix = vals + (u64)it[i] * k;
				found = (scan >> i) & 1 ? stm_ring_scan(iv, ix, k, snap, &v) : stm_ring_back(iv, ix, k, h[i], 0, snap, &v);
			}
			if (!found) {
				stm_fail(tx, STM_ST_ABORT + STM_TOO_OLD, it[i]);
				stop = i;
				break;
			}
			if (!stm_read_note(tx, it[i], v)) {
				stop = i;
				break;
			}
			out[base + i] = v;
		}
		if (stop < c) {
			// The attempt failed: this chunk's later reads and the rest are 0.
			for (u32 i = base + stop; i < n; i++) out[i] = 0;
			return;
		}
	}
}

// stm_write buffers value for item until commit.
__device__ __forceinline__ void stm_write(stm_tx* tx, u32 item, u64 value) {
	const stm_globals* g = tx->g;
	if (tx->state != STM_ST_OK || stm_deadline_passed(tx)) return;
	if (!tx->begun) {
		stm_fail(tx, STM_ERR_NO_BEGIN, 0);
		return;
	}
	if (tx->ro) {
		stm_fail(tx, STM_ERR_RO_WRITE, item);
		return;
	}
	if ((u64)item >= g->n_items) {
		stm_fail(tx, STM_ERR_ITEM, item);
		return;
	}
	u32* wi = (u32*)g->ws_item + (u64)tx->tid * (u32)g->w_cap;
	u64* wv = (u64*)g->ws_val + (u64)tx->tid * (u32)g->w_cap;
	const stm_set_row items = stm_ws_items(g, tx->tid);
	for (u32 j = 0; j < tx->nw; j++)
		if (items[j] == item) {
			wv[j] = value;
#if STM_DIRECT
			if (j < STM_SET_SMEM) stm_mirror_wv[j][tx->tid % STM_CLIENT_BLOCK] = value;
#endif
			return;
		}
	if (tx->nw == (u32)g->w_cap) {
		stm_fail(tx, STM_ERR_WRITES, (u32)g->w_cap);
		return;
	}
	wi[tx->nw] = item;
	wv[tx->nw] = value;
#if STM_DIRECT
	if (tx->nw < STM_SET_SMEM) {
		stm_mirror_wi[tx->nw][tx->tid % STM_CLIENT_BLOCK] = item;
		stm_mirror_wv[tx->nw][tx->tid % STM_CLIENT_BLOCK] = value;
	}
#endif
	tx->nw++;
	tx->pmask |= 1ull << stm_partition(g, item);
}

// ---- Zipf ranks, as stm/rng.go (Gray et al.); parameters from params[at]:
// n, theta, zetan, eta, alpha, 1+0.5^theta (doubles as bits). -------------
__device__ u64 stm_zipf(stm_tx* tx, int at) {
	u64 n = stm_param(tx, at);
	double theta = stm_param_double(tx, at + 1);
	if (theta == 0.0 || n < 2) return stm_below(tx, n);
	double u = stm_unit(tx);
	double uz = u * stm_param_double(tx, at + 2);
	if (uz < 1.0) return 0;
	if (uz < stm_param_double(tx, at + 5)) return 1;
	double eta = stm_param_double(tx, at + 3);
	u64 k = (u64)((double)n * pow(eta * u - eta + 1.0, stm_param_double(tx, at + 4)));
	return k < n - 1 ? k : n - 1;
}
