// stm/server.cu: CSMV's server side: one block per partition holding the log
// of recent commits in shared memory; worker warps take requests from the
// partition's request ring, validate and log them, and a receiver warp logs
// finalized multi-partition transactions (device.cuh describes the
// protocol).

#include "stm/log.cuh"

// stm_commit_single validates in its turn when an insertion of this many
// entries after its own would drop entries it has yet to scan.
#define STM_EARLY_MARGIN 32

// A worker's statistics, summed into the counters when it leaves.
struct stm_wstats {
	u64 cy_validate, cy_insert; // cycles of the first validation and of the rest, per transaction
	u64 cy_turn, cy_hold;       // cycles waited for turns, and turns held (to the publication) by single-partition requests
	u64 fast, batched, scanned; // requests logged at once; validated as a batch; log entries scanned
	u64 turns, grouped, early;  // single-partition turns taken; requests logged in another's turn; validated in their turn
	// Stages of a request, summed over requests (cycles of the server's
	// SM, ns of the global timer): loading it, its first validation, its
	// final checks, the reply, the worker's whole time on it (taken to
	// replied); from the client's send to the worker taking it, and to the
	// reply; the requests.
	u64 cy_load, cy_val, cy_final, cy_reply, cy_busy, ns_ring, ns_server, requests;
	u64 rerun; // conflicting attempts run again before their turn and committed (Options.ServerCommit retry)
};

// STM_CHUNK is the accesses of a request one table load holds: half the
// table, so that a probe finds its item or a free slot within a few steps.
#define STM_CHUNK (STM_TABLE / 2)

// stm_table_put adds lane bit to item's read (rd) or write (wr) lanes.
__device__ __forceinline__ void stm_table_put(stm_scratch* S, u32 item, u32 bit, bool write) {
	u32 h = stm_hash10(item) & (STM_TABLE - 1);
	for (;;) {
		const u32 k = atomicCAS(&S->key[h], STM_EMPTY, item);
		if (k == STM_EMPTY || k == item) break;
		h = (h + 1) & (STM_TABLE - 1);
	}
	atomicOr(write ? &S->wr[h] : &S->rd[h], bit);
}

// stm_table_find returns item's slot, or -1.
__device__ __forceinline__ int stm_table_find(const stm_scratch* S, u32 item) {
	u32 h = stm_hash10(item) & (STM_TABLE - 1);
	for (;;) {
		const u32 k = ((volatile const u32*)S->key)[h];
		if (k == item) return (int)h;
		if (k == STM_EMPTY) return -1;
		h = (h + 1) & (STM_TABLE - 1);
	}
}

// stm_newer returns the lanes whose snapshot is older than ts.
__device__ __forceinline__ u32 stm_newer(const stm_scratch* S, u64 ts) {
	u32 m = 0;
	for (u32 l = 0; l < 32; l++)
		if (S->snap[l] < ts) m |= 1u << l;
	return m;
}

// stm_scan_batch checks the request in the worker's table against the log
// entries [lo, hi) newer than min_snap: lanes take entries hi-1-lane,
// hi-1-lane-32, ...; an entry's item found in the table conflicts with the
// lanes that have it and a snapshot older than the entry (read-write when
// they read it, else write-write); a wildcard entry (items not listed)
// with every lane whose snapshot is older (log full). Conflicts collect in
// S->rw, ww, lf. All lanes call it; the caller syncs the warp after.
// Returns the entries scanned.
__device__ u32 stm_scan_batch(const stm_globals* g, stm_log& L, stm_scratch* S, u32 lane, u64 lo, u64 hi, u64 min_snap) {
	const u64 emask = g->log_e - 1, amask = g->log_a - 1;
	u32 rw = 0, ww = 0, lf = 0, seen = 0;
	for (long long a = (long long)hi - 1 - lane; a >= (long long)lo; a -= 32) {
		const u64 e = (u64)a & emask;
		const u64 ts = L.ts[e];
		if (ts <= min_snap) break;
		seen++;
		const int c = L.cnt[e];
		if (c == STM_WILDCARD) {
			lf |= stm_newer(S, ts);
			continue;
		}
		const u64 pos = L.pos[e];
		for (int k = 0; k < c; k++) {
			const int s = stm_table_find(S, L.pool[(pos + k) & amask]);
			if (s < 0) continue;
			const u32 n = stm_newer(S, ts);
			rw |= S->rd[s] & n;
			ww |= S->wr[s] & ~S->rd[s] & n;
		}
	}
	rw = __reduce_or_sync(FULL_MASK, rw);
	ww = __reduce_or_sync(FULL_MASK, ww);
	lf = __reduce_or_sync(FULL_MASK, lf);
	if (lane == 0) {
		S->rw |= rw;
		S->ww |= ww;
		S->lf |= lf;
	}
	return __reduce_add_sync(FULL_MASK, seen);
}


// A request a worker serves, as each lane sees it (lane l: client lane l).
// Its accesses are numbered in one sequence: lane 0's reads, then its
// writes, then lane 1's, ...; the table takes them STM_CHUNK at a time
// (chunk gi: accesses [gi * STM_CHUNK, (gi + 1) * STM_CHUNK)), so a
// transaction of any size is validated in batches, several small ones in
// one chunk and a large one over several.
struct stm_job {
	u32 cw, mask, kind, seq; // client warp, its lanes, REQ_*, reply number
	bool in;                 // client lane l is in the request
	u32 tid;                 // client thread
	u64 snap, min_snap;      // lane's snapshot (~0 when not in), the request's oldest
	u32 nr, nw;              // lane's read and write set sizes
	u32 start, total;        // lane's first access in the sequence; the request's accesses
	u32 chunks;              // table loads the request takes (at least 1)
	u32 c0, c1;              // lane's first and last chunk
	bool staged;             // every lane's writes are in S->witem (at most STM_SPL each)
	u32 cl;                  // a single-partition lane's writes (all of this partition), else 0
	u64 hv;                  // lane is validated up to log entry hv (the head its first chunk's validation read)
};

// stm_job_load sets up the request of client warp cw's lanes mask (kind,
// reply number seq): reads its transactions' snapshots and set sizes, and
// plans its validation: the chunks of the access sequence (stm_job), and
// each lane's.
__device__ __forceinline__ void stm_job_load(const stm_globals* g, u32 lane, stm_job& J, u32 cw, u32 mask, u32 kind, u32 seq) {
	J.cw = cw;
	J.mask = mask;
	J.kind = kind;
	J.seq = seq;
	J.in = (J.mask >> lane) & 1;
	J.tid = J.cw * 32 + lane;
	J.snap = ~0ull;
	J.nr = J.nw = 0;
	if (J.in) {
		J.snap = cg64(g->tx_snap, J.tid);
		J.nr = cg32(g->tx_nr, J.tid);
		J.nw = cg32(g->tx_nw, J.tid);
	}
	J.min_snap = warp_min64(J.snap);
	const u32 a = J.nr + J.nw;
	const u32 incl = warp_incl_sum32(a, lane); // inclusive prefix sum of the accesses
	J.start = incl - a;
	J.total = __shfl_sync(FULL_MASK, incl, 31);
	J.chunks = max(1u, (J.total + STM_CHUNK - 1) / STM_CHUNK);
	J.c0 = a ? J.start / STM_CHUNK : 0;
	J.c1 = a ? (incl - 1) / STM_CHUNK : 0;
	J.cl = J.in && J.kind == REQ_SINGLE ? J.nw : 0;
	J.staged = __reduce_max_sync(FULL_MASK, J.cl) <= STM_SPL;
	J.hv = 0;
}

// stm_table_fill clears the worker's table and puts in it the accesses of
// chunk gi that are of partition p (lane bits in rd and wr); with stage,
// a single-partition request's writes among them that are one of their
// lane's first STM_SPL are staged in S->witem (lane l's write j at l *
// STM_SPL + j). With check, it also validates them against the items'
// newest logged writes (wts, log.cuh; the caller read head and fenced
// first): an access whose item's wts is newer than its lane's snapshot
// conflicts, read-write for a read, write-write for a write (a lane that
// also read the item has the read-write conflict, which counts first);
// the lanes go to S->rw and S->ww. Thread mapping: lane k loads accesses
// gi * STM_CHUNK + k, + k + 32, ... (its owner by stm_owner), all
// STM_CHUNK / 32 loads issued before any is used: one round trip to L2,
// and with check their wts as many again. All lanes call it.
__device__ __forceinline__ void stm_table_fill(const stm_globals* g, stm_scratch* S, u32 p, u32 lane, const stm_job& J, u32 gi, bool stage,
                                               bool check = false) {
	constexpr u32 per = STM_CHUNK / 32;
	for (u32 i = lane; i < STM_TABLE; i += 32) {
		S->key[i] = STM_EMPTY;
		S->rd[i] = 0;
		S->wr[i] = 0;
	}
	__syncwarp();
	const u32 lo = gi * STM_CHUNK, hi = min(lo + STM_CHUNK, J.total);
	u32 item[per], own[per], wj[per];
	bool ok[per];
#pragma unroll
	for (u32 k = 0; k < per; k++) {
		const u32 x = lo + k * 32 + lane;
		const u32 o = stm_owner(J.start, x);
		const u32 j = x - __shfl_sync(FULL_MASK, J.start, o);
		const u32 nr = __shfl_sync(FULL_MASK, J.nr, o);
		const u64 t = (u64)J.cw * 32 + o;
		ok[k] = x < hi;
		own[k] = o;
		wj[k] = j >= nr ? j - nr : STM_EMPTY;
		item[k] = 0;
		if (ok[k]) item[k] = j < nr ? cg32(g->rs_item, t * (u32)g->r_cap + j) : cg32(g->ws_item, t * (u32)g->w_cap + (j - nr));
	}
	u32 rw = 0, ww = 0;
	if (check) {
		u64 w[per];
#pragma unroll
		for (u32 k = 0; k < per; k++) {
			ok[k] = ok[k] && stm_partition(g, item[k]) == p;
			w[k] = ok[k] ? stm_wts_read(g, item[k]) : 0;
		}
#pragma unroll
		for (u32 k = 0; k < per; k++) {
			const u64 snap = __shfl_sync(FULL_MASK, J.snap, own[k]); // every lane shuffles: not under ok
			if (ok[k] && w[k] > snap) {
				if (wj[k] == STM_EMPTY)
					rw |= 1u << own[k];
				else
					ww |= 1u << own[k];
			}
		}
		rw = __reduce_or_sync(FULL_MASK, rw);
		ww = __reduce_or_sync(FULL_MASK, ww);
	}
#pragma unroll
	for (u32 k = 0; k < per; k++) {
		if (!ok[k] || stm_partition(g, item[k]) != p) continue;
		const bool w = wj[k] != STM_EMPTY;
		stm_table_put(S, item[k], 1u << own[k], w);
		if (stage && w && wj[k] < STM_SPL) S->witem[own[k] * STM_SPL + wj[k]] = item[k];
	}
	if (check && lane == 0) {
		S->rw |= rw;
		S->ww |= ww;
	}
	__syncwarp();
}

// stm_cause_of returns 1 + lane's conflict cause found in the scratch's
// conflict masks (read-write before write-write before log full), or 0.
__device__ __forceinline__ u32 stm_cause_of(const stm_scratch* S, u32 lane) {
	const u32 bit = 1u << lane;
	return (S->rw & bit) ? 1 + STM_READ_WRITE : (S->ww & bit) ? 1 + STM_WRITE_WRITE
	     : (S->lf & bit) ? 1 + STM_LOG_FULL : 0;
}

// stm_validate_table validates the request, chunk by chunk, against
// every commit logged before the head it reads first: each lane reads
// head and fences, then the chunk's accesses are put in the table and
// checked against their items' newest logged writes (stm_table_fill with
// check): a cost of the request's accesses, not of the entries logged
// since its snapshots, and no entry is too old for it (the table keeps
// what the log drops). Each lane remembers in J.hv the head its first
// chunk was validated at (the least any lane read; heads grow, so the
// lane is validated up to there); the final check scans the log from
// there. Returns lane's 1 + cause, or 0.
__device__ __forceinline__ u32 stm_validate_table(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 lane, stm_job& J) {
	stm_log_ctl* ctl = L.ctl;
	S->snap[lane] = J.snap;
	if (lane == 0) S->rw = S->ww = S->lf = 0;
	__syncwarp();
	for (u32 gi = 0; gi < J.chunks; gi++) {
		const u64 h = warp_min64(ctl->head); // every lane: its own read, then the fence
		__threadfence_block();
		stm_table_fill(g, S, p, lane, J, gi, J.kind == REQ_SINGLE && J.staged, true);
		if (J.c0 == gi) J.hv = h;
	}
	__threadfence_block();
	__syncwarp();
	return J.in ? stm_cause_of(S, lane) : 0;
}

// stm_revalidate validates, in the caller's turn before it logs anything,
// the lanes lost (their entries to scan left the log, or a wildcard entry
// conflicts with them) against their items' newest logged writes
// (stm_table_fill with check, chunk by chunk), which is then exact: every
// entry before the turn's slot is complete and raised its items' wts
// before it was published (stm_wts_note), and no entry after it is
// written yet, so an item's wts newer than a lane's snapshot is a commit
// since the snapshot that wrote it (or a phantom: a spurious abort, never
// a missed conflict). The lost lanes get read-write or write-write causes,
// or none, instead of log full; the others keep cause. Cost: the lost
// lanes' chunks loaded again, one wts load per access. Before it, a log
// of 4 entries with every update attempt sent (contention off) aborted
// 83% of its attempts for log full and committed 24-91 transactions a
// second (H200, 2026-11-30).
__device__ __noinline__ u32 stm_revalidate(const stm_globals* g, stm_scratch* S, u32 p, u32 lane, const stm_job& J, bool lost, u32 cause) {
	__syncwarp();
	if (lane == 0) S->rw = S->ww = S->lf = 0;
	__syncwarp();
	for (u32 gi = 0; gi < J.chunks; gi++)
		if (__ballot_sync(FULL_MASK, lost && J.c0 <= gi && gi <= J.c1)) stm_table_fill(g, S, p, lane, J, gi, false, true);
	__threadfence_block();
	__syncwarp();
	return lost ? stm_cause_of(S, lane) : cause;
}

// stm_final_check validates the request's tentative survivors against the
// entries published since their first validation, up to h1 (the request's
// first slot: all before it are complete), chunk by chunk from the last
// (the table holds it; the others are loaded again), each from the least
// J.hv of its lanes (entries scanned twice find the same conflicts).
// Entries of [J.hv, h1) dropped from the log before the scan ended (the
// tail passed J.hv; read after a fence) may have been overwritten while
// read: in_turn (the caller holds the turn at h1 and has logged nothing
// yet) their lanes, and those that only a wildcard entry (items not
// listed) conflicts with, are validated again against the items' newest
// logged writes (stm_revalidate); otherwise they abort (log full; those
// entries are newer than the lanes' snapshots). Returns lane's cause as
// updated.
__device__ __forceinline__ u32 stm_final_check(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 lane, const stm_job& J, u64 h1,
                                               u32 cause, stm_wstats* st, bool in_turn) {
	const u64 c0 = clock64();
	u64* scanned = &st->scanned;
	int held = (int)J.chunks - 1; // the chunk the table holds
	for (int gi = (int)J.chunks - 1; gi >= 0; gi--) {
		const bool member = J.in && !cause && J.c0 <= (u32)gi && (u32)gi <= J.c1;
		if (!__ballot_sync(FULL_MASK, member)) continue;
		const u64 lo = warp_min64(member ? J.hv : ~0ull);
		if (lo >= h1) continue;
		if (held != gi) {
			stm_table_fill(g, S, p, lane, J, (u32)gi, false);
			held = gi;
		}
		*scanned += stm_scan_batch(g, L, S, lane, lo, h1, J.min_snap);
		__syncwarp();
	}
	if (!cause && J.in) cause = stm_cause_of(S, lane);
	__threadfence_block();
	const bool dropped = !cause && J.in && min((u64)L.ctl->tail, h1) > J.hv;
	if (in_turn) {
		const bool lost = dropped || (J.in && cause == 1 + STM_LOG_FULL); // or only a wildcard entry conflicts
		if (__ballot_sync(FULL_MASK, lost)) cause = stm_revalidate(g, S, p, lane, J, lost, cause);
	} else if (dropped) {
		cause = 1 + STM_LOG_FULL;
	}
	st->cy_final += clock64() - c0;
	return cause;
}

// stm_early reports whether logging entries up to slot end, with items
// more pool positions, and then a request as large (STM_EARLY_MARGIN
// entries more, as many items again) could drop entry h, which survivors
// have yet to scan (h = ~0: none): stm_log_evict's test at h.
__device__ __forceinline__ bool stm_early(const stm_globals* g, const stm_log& L, u64 h, u64 end, u32 items) {
	return h != ~0ull && (end + STM_EARLY_MARGIN - h > g->log_n ||
	                      L.pos[h & (g->log_e - 1)] + g->log_w < L.ctl->pool_head + 2 * items + STM_EARLY_MARGIN * STM_SPL);
}

// stm_commit_single commits, in the worker's turn at slot s, the
// tentative survivors slots of a single-partition request, alone: it
// takes consecutive timestamps for all of them, logs them at once (their
// writes staged in the scratch, or copied from the write sets by the whole
// warp), passes the turn on and only then validates them against the
// entries published since their first validation, [J.hv, s). When its own
// eviction, or the next request's, would drop entries of that range
// (stm_early with need, the first of them; a small log, or a long wait for
// the turn), it validates them first, in its turn, and logs the survivors
// (null entries for the others); so it does when the entries or their
// items do not fit the log, and then logs them one at a time
// (stm_log_insert: wildcards for entries over log_w items). Returns the
// first timestamp; *cause is each lane's cause. All lanes call it.
__device__ __forceinline__ u64 stm_commit_single(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 lane, stm_job& J, u32 slots, u64 s,
                                                 u32 items, u64 need, u32* cause, stm_wstats* st) {
	const u64 c0 = clock64();
	const u32 m = __popc(slots);
	const u64 first = stm_take_ts(g, L.ctl, lane, m);
	const bool batch = m <= g->log_n && items <= g->log_w;
	const bool early = !batch || stm_early(g, L, need, s + m, items);
	u32 lanes = slots;
	if (early) {
		*cause = stm_final_check(g, L, S, p, lane, J, s, *cause, st, true);
		lanes = slots & __ballot_sync(FULL_MASK, J.in && *cause == 0);
		st->early++;
	}
	if (batch) {
		stm_log_insert_batch(g, L, S, lane, J.cw, slots, lanes, J.cl, J.staged, first);
		st->fast++;
	} else {
		stm_log_insert(g, L, p, lane, J.cw, slots, lanes, slots, first);
	}
	st->cy_hold += clock64() - c0;
	if (!early) *cause = stm_final_check(g, L, S, p, lane, J, s, *cause, st, false);
	return first;
}

// stm_offer_request offers worker me's request (first slot s, survivors
// slots with items staged writes, lane's cl of them; need as in
// stm_early) to be logged in an earlier request's turn (stm_offer): the
// fields first (first reset to ~0), slot last. All lanes call it.
__device__ __forceinline__ void stm_offer_request(stm_log_ctl* ctl, u32 me, u32 lane, u64 s, u32 slots, u32 items, u64 need, u32 cl) {
	stm_offer* o = &ctl->offer[me];
	o->cl[lane] = (slots >> lane) & 1 ? cl : 0;
	if (lane == 0) {
		o->first = ~0ull;
		o->slots = slots;
		o->items = items;
		o->need = need;
	}
	__threadfence_block();
	__syncwarp();
	if (lane == 0) o->slot = s;
}

// stm_group_write writes, for a request that an earlier turn's group took
// (stm_turn returned STM_GROUPED), its survivors' entries from its own
// staged writes at the slots and pool position the group's holder gave it
// (its offer's first and pos), tells the group (stm_group_done: the last
// member to finish publishes the whole group), then waits until head
// passes its slot s (the entries before it are then complete) and
// validates its survivors against them (stm_final_check). Returns its
// first timestamp; *cause is each lane's cause; ~0: the run failed. All
// lanes call it.
__device__ u64 stm_group_write(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 me, u32 lane, stm_job& J, u32 slots, u64 s,
                               u64 deadline, u32* cause, stm_wstats* st) {
	__threadfence_block();
	const stm_offer* o = &L.ctl->offer[me];
	const u64 first = o->first, pos = o->pos;
	stm_log_write_staged(g, L, S, lane, slots, true, J.cl, s, pos, first);
	stm_group_done(L, lane, &st->cy_hold);
	if (stm_turn(g, L.ctl, nullptr, lane, s + 1, deadline, &st->cy_turn) == ~0ull) return ~0ull;
	*cause = stm_final_check(g, L, S, p, lane, J, s, *cause, st, false);
	return first;
}

// stm_commit_group commits, in the worker's turn at slot s, its own
// single-partition request (survivors slots, items staged writes, need as
// in stm_early; it offered, and is not early) together with the requests
// that follow it in slot order and offered (stm_offer), as many as keep
// the group's entries and items within the log and the group's eviction
// away from every member's entries yet to scan (stm_early at the group's
// end). The holder reserves for the whole group: one timestamp
// reservation (consecutive, in slot order), one eviction, and each other
// member's first timestamp and pool position, stored in its offer; then
// every member writes its own entries from its own staged writes, in
// parallel (the holder here, the others in stm_group_write), and the last
// to finish publishes head past the group (stm_group_done), which passes
// the turn on. Each member then validates its own survivors against the
// entries before its slot, as a request logged alone does. Returns the
// own first timestamp; *cause is each lane's cause after its final check.
// Thread mapping: lane w reads worker w's offer once (again once when the
// chain ends for want of an offer); the warp walks the chain in
// registers (a ballot for the offer at the group's end); lane k keeps the
// k-th member's worker, slot and pool position, and stores its offer.
// Invariant: head stays at s until every member's entries are written.
// All lanes call it.
__device__ u64 stm_commit_group(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 me, u32 lane, stm_job& J, u32 slots, u64 s,
                                u32 items, u64 need, u32* cause, stm_wstats* st) {
	const u64 c0 = clock64();
	stm_log_ctl* ctl = L.ctl;
	u64 end = s + __popc(slots), h = need;
	u32 total = items, n = 1, member = me, mitems = items;
	u64 mslot = s;
	u64 os = ~0ull, on = ~0ull; // lane w: worker w's offer (its slot, need, survivors and items)
	u32 om = 0, oi = 0;
	for (u32 fresh = 0; n < 32;) {
		if (fresh == 0 || fresh == 2) {
			os = lane < STM_WORKERS ? ctl->offer[lane].slot : ~0ull;
			__threadfence_block();
			if (os != ~0ull && os >= end) {
				const stm_offer* o = &ctl->offer[lane];
				om = __popc(o->slots);
				oi = o->items;
				on = o->need;
			}
			fresh++;
		}
		const u32 b = __ballot_sync(FULL_MASK, os == end);
		if (!b) {
			if (fresh == 1) {
				fresh = 2; // look once more: offers posted since
				continue;
			}
			break;
		}
		const u32 w = __ffs(b) - 1;
		const u32 mw = __shfl_sync(FULL_MASK, om, w), iw = __shfl_sync(FULL_MASK, oi, w);
		const u64 hw = min(h, (u64)__shfl_sync(FULL_MASK, on, w));
		if (end + mw - s > g->log_n || total + iw > g->log_w || stm_early(g, L, hw, end + mw, total + iw)) break;
		if (lane == n) {
			member = w;
			mslot = end;
			mitems = iw;
		}
		n++;
		end += mw;
		total += iw;
		h = hw;
	}
	const u32 incl = warp_incl_sum32(lane < n ? mitems : 0, lane); // inclusive prefix sum of the members' items
	const u64 ts0 = stm_take_ts0(g, ctl, lane, (u32)(end - s)); // used after the eviction
	const u64 base = ctl->pool_head;
	stm_log_evict(g, L, lane, s, (u32)(end - s), base + total);
	if (lane == 0) {
		ctl->grp_end = end;
		ctl->grp_pool = base + total;
		ctl->grp_c0 = c0;
		ctl->grp_left = n;
	}
	const u64 t0 = __shfl_sync(FULL_MASK, ts0, 0);
	const bool other = lane > 0 && lane < n;
	if (other) ctl->offer[member].pos = base + incl - mitems;
	__threadfence_block();
	__syncwarp();
	if (other) ctl->offer[member].first = t0 + (mslot - s);
	stm_log_write_staged(g, L, S, lane, slots, true, J.cl, s, base, t0);
	stm_group_done(L, lane, &st->cy_hold);
	st->fast++;
	*cause = stm_final_check(g, L, S, p, lane, J, s, *cause, st, false);
	return t0;
}

// stm_commit_turn commits the tentative survivors slots (nonzero) of a
// request of worker me: it reserves their slots (one atomic) and, for a
// single-partition request whose writes are staged and fit the log,
// offers it to an earlier turn (stm_offer_request); then it waits for its
// turn, or for an earlier turn's group to take it (then it writes its own
// entries where the group's holder said and validates its survivors
// against the entries before its slot, stm_group_write). In its own turn
// a single-partition request commits with the offers that follow
// (stm_commit_group) or alone (stm_commit_single; a survivor that fails
// its final validation leaves its timestamp as a hole and its entry, if
// logged, as a phantom); a prepare validates its survivors in its turn
// and keeps the turn for the client's finalize (ctl->prep_*), or, when
// none survived, fills its slots with null entries. Returns the first
// timestamp (single), in *cause each lane's cause; false: the run failed.
__device__ bool stm_commit_turn(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 me, u32 lane, stm_job& J, u32 slots, u64 deadline,
                                u32* cause, u64* first, stm_wstats* st) {
	stm_log_ctl* ctl = L.ctl;
	const u32 m = __popc(slots);
	const u64 s = stm_reserve(ctl, lane, m);
	const bool single = J.kind == REQ_SINGLE, mine = (slots >> lane) & 1;
	const u32 items = __reduce_add_sync(FULL_MASK, mine ? J.cl : 0);
	const u64 hv = warp_min64(mine ? J.hv : ~0ull), need = hv < s ? hv : ~0ull;
	const bool offer = single && J.staged && m <= g->log_n && items <= g->log_w;
	if (offer) stm_offer_request(ctl, me, lane, s, slots, items, need, J.cl);
	const u64 h = stm_turn(g, ctl, offer ? &ctl->offer[me] : nullptr, lane, s, deadline, &st->cy_turn);
	if (h == ~0ull) return false;
	if (h == STM_GROUPED) { // an earlier turn's group took this request
		st->grouped++;
		*first = stm_group_write(g, L, S, p, me, lane, J, slots, s, deadline, cause, st);
		return *first != ~0ull;
	}
	if (single) {
		st->turns++;
		if (offer && !stm_early(g, L, need, s + m, items))
			*first = stm_commit_group(g, L, S, p, me, lane, J, slots, s, items, need, cause, st);
		else
			*first = stm_commit_single(g, L, S, p, lane, J, slots, s, items, need, cause, st);
		return true;
	}
	*cause = stm_final_check(g, L, S, p, lane, J, s, *cause, st, true);
	if (__ballot_sync(FULL_MASK, J.in && *cause == 0)) {
		if (lane == 0) {
			ctl->prep_slots = slots;
			ctl->prep_cw = J.cw;
		}
		__threadfence_block();
	} else {
		stm_log_insert(g, L, p, lane, J.cw, slots, 0, 0, 0);
	}
	return true;
}

#include "stm/serve.cu"

// stm_reply writes each lane's result (a timestamp, STM_RES_PREPARED, or
// STM_RES_FLAG | cause, with the lane's timestamp << 8 when it took one,
// a hole the client marks done; with flags, e.g. STM_RES_SERVED: the
// server wrote it back and marked it done, serve.cu), then the reply word
// the client polls. Lanes of slots hold timestamps first + their rank.
__device__ __forceinline__ void stm_reply(const stm_globals* g, u32 p, u32 lane, const stm_job& J, u32 cause, u32 slots, u64 first, u64 flags = 0) {
	if (J.in) {
		const u64 ts = first + __popc(slots & lanemask_lt(lane));
		const bool took = J.kind == REQ_SINGLE && ((slots >> lane) & 1);
		u64 r;
		if (cause)
			r = STM_RES_FLAG | (cause - 1) | (took ? ts << 8 : 0) | flags;
		else if (J.kind == REQ_SINGLE)
			r = ts | flags;
		else
			r = STM_RES_PREPARED;
		st_relaxed_gpu((u64*)g->res + J.cw * 32 + lane, r);
	}
	__threadfence();
	__syncwarp();
	if (lane == 0) st_release_gpu((u32*)g->reply + (u64)J.cw * g->servers + p, J.seq);
}

// A request as a worker takes it from the ring.
struct stm_taken {
	u32 cw, mask, kind, seq;
	u64 sent;
};

// stm_take claims the next slot of partition p's request ring (lane 0's
// atomicAdd on ctl->claim: the workers take the requests in ring order,
// each its own slot, no hand-off) and waits until the client has posted
// it (its seq is slot + 1: a relaxed poll, backing off up to 256 ns, then
// an acquiring load before the fields are read). A slot is claimed before
// it is posted when the ring is empty; a client posts at most one request
// per server at a time and the ring has a slot for every client warp, so
// a slot is not reused while claimed. Returns false (every lane) when the
// server ends (ctl->exit: every client warp has left, so every request
// posted was answered) or the run failed.
__device__ __forceinline__ bool stm_take(const stm_globals* g, stm_log_ctl* ctl, u32 p, u32 lane, stm_taken* t) {
	u32 ok = 0;
	if (lane == 0) {
		const u64 s = atomicAdd((unsigned long long*)&ctl->claim, 1ull);
		const stm_req* r = stm_req_slot(g, p, s);
		u32 n = 0, ns = 32;
		for (;;) {
			if (ld_relaxed_gpu(&r->seq) == s + 1 && ld_acquire_gpu(&r->seq) == s + 1) {
				ok = 1;
				break;
			}
			if (ctl->exit || stm_wait_check(g, ~0ull, &n, STM_AT_WORKER)) break; // the receiver keeps the deadline
			stm_backoff(&ns, 256);
		}
		if (ok) {
			t->cw = r->warp;
			t->mask = r->mask;
			t->kind = r->kind;
			t->seq = r->cseq;
			t->sent = r->sent;
		}
	}
	if (!__shfl_sync(FULL_MASK, ok, 0)) return false;
	t->cw = __shfl_sync(FULL_MASK, t->cw, 0);
	t->mask = __shfl_sync(FULL_MASK, t->mask, 0);
	t->kind = __shfl_sync(FULL_MASK, t->kind, 0);
	t->seq = __shfl_sync(FULL_MASK, t->seq, 0);
	t->sent = __shfl_sync(FULL_MASK, t->sent, 0);
	return true;
}

// stm_worker serves requests it takes from the partition's ring
// (stm_take): thread mapping: one warp per request, lane l answers client
// lane l. Steps: take a request, load it, validate it against the
// published log (in chunks of its accesses, stm_validate_table), then
// commit its survivors in turn (stm_commit_turn), and reply; it times each
// stage (stm_wstats). Invariant: a worker holds the log's turn only
// between stm_turn and passing it on (or, for a prepare, until the
// receiver finalizes it), and waits for nothing else meanwhile.
__device__ void stm_worker(const stm_globals* g, stm_log& L, u32 p, u32 me, u32 lane, u64 deadline) {
	stm_log_ctl* ctl = L.ctl;
	stm_scratch* S = &ctl->scratch[me];
	stm_wstats st = {};
	stm_taken t;
	while (stm_take(g, ctl, p, lane, &t)) {
		const u64 taken = clock64();
		st.ns_ring += globaltimer_ns() - t.sent;
		st.requests++;
		stm_job J;
		stm_job_load(g, lane, J, t.cw, t.mask, t.kind, t.seq);
		const u64 c0 = clock64();
		u32 cause = stm_validate_table(g, L, S, p, lane, J); // lane l: 1 + cause of client lane l's abort
		st.batched++;
		u64 first = 0, flags = 0;
#if STM_RETRY
		if (J.kind == REQ_SINGLE && J.chunks == 1 && !stm_retry(g, L, S, p, lane, J, &cause, &flags, deadline)) break;
#endif
		const u32 slots = __ballot_sync(FULL_MASK, J.in && cause == 0);
		const u64 c1 = clock64();
		if (slots && !stm_commit_turn(g, L, S, p, me, lane, J, slots, deadline, &cause, &first, &st)) break;
#if STM_POST
		if (J.kind == REQ_SINGLE && slots) stm_post_install(g, lane, J, slots, first, cause, &flags);
#endif
		const u64 c2 = clock64();
		stm_reply(g, p, lane, J, cause, slots, first, flags);
#if STM_RETRY
		const u32 rr = __ballot_sync(FULL_MASK, (flags & STM_RES_RERUN) && cause == 0);
		st.rerun += __popc(rr);
#endif
		const u64 c3 = clock64();
		st.cy_validate += (c1 - c0) * __popc(J.mask);
		st.cy_insert += (c3 - c1) * __popc(J.mask);
		st.cy_load += c0 - taken;
		st.cy_val += c1 - c0;
		st.cy_reply += c3 - c2;
		st.cy_busy += c3 - taken;
		st.ns_server += globaltimer_ns() - t.sent;
		__syncwarp();
	}
	if (lane == 0) {
		unsigned long long* counters = (unsigned long long*)g->counters;
		atomicAdd(&counters[CNT_REQUESTS], st.requests);
		atomicAdd(&counters[CNT_CY_VALIDATE], st.cy_validate);
		atomicAdd(&counters[CNT_CY_INSERT], st.cy_insert);
		atomicAdd(&counters[CNT_FAST_INSERTS], st.fast);
		atomicAdd(&counters[CNT_BATCHED], st.batched);
		atomicAdd(&counters[CNT_SCANNED], st.scanned);
		atomicAdd(&counters[CNT_CY_LOCK], st.cy_turn);
		atomicAdd(&counters[CNT_CY_HOLD], st.cy_hold);
		atomicAdd(&counters[CNT_TURNS], st.turns);
		atomicAdd(&counters[CNT_GROUPED], st.grouped);
		atomicAdd(&counters[CNT_EARLY], st.early);
		atomicAdd(&counters[CNT_CY_LOAD], st.cy_load);
		atomicAdd(&counters[CNT_CY_VAL], st.cy_val);
		atomicAdd(&counters[CNT_CY_FINAL], st.cy_final);
		atomicAdd(&counters[CNT_CY_REPLY], st.cy_reply);
		atomicAdd(&counters[CNT_CY_BUSY], st.cy_busy);
		atomicAdd(&counters[CNT_NS_RING], st.ns_ring);
		atomicAdd(&counters[CNT_NS_SERVER], st.ns_server);
		if (st.rerun) atomicAdd(&counters[CNT_RERUN], st.rerun);
	}
}

// stm_receiver logs finalized multi-partition transactions in the slots
// their prepare reserved (which passes the log's turn on), mirrors the
// host's stop and abort flags (server 0), keeps the run's deadline, and
// ends the server (ctl->exit) when every client warp has left (each left
// only with every request it posted answered) and every finalize message
// was logged; the workers take the requests themselves (stm_take).
__device__ void stm_receiver(const stm_globals* g, stm_log& L, u32 p, u32 lane, u64 deadline) {
	stm_log_ctl* ctl = L.ctl;
	u64* dctl = stm_dctl(g);
	u64* hctl = stm_hctl(g);
	u64 fh = 0;
	for (u32 n = 0;; n++) {
		u32 flags = 0;
		if (lane == 0 && (n & 63) == 0) {
			if (p == 0) {
				if (ld_relaxed_sys(&hctl[HCTL_STOP])) st_relaxed_gpu(&dctl[DCTL_STOP], 1);
				if (ld_relaxed_sys(&hctl[HCTL_ABORT])) stm_error(g, STM_ERR_ABORTED, 0, 0);
			}
			if (stm_errored(g))
				flags = 1;
			else if (globaltimer_ns() > deadline) {
				stm_error(g, STM_ERR_DEADLINE, STM_AT_RECEIVE, 0);
				flags = 1;
			}
		}
		if (__shfl_sync(FULL_MASK, flags, 0)) break;
		bool idle_round = true;
		// Finalize messages, in order (polled with a relaxed load, then
		// read after an acquiring one).
		for (;;) {
			const stm_fin* f = stm_fin_slot(g, p, fh);
			u32 ready = 0, cw = 0, mask = 0, all = 0, cseq = 0;
			u64 t0 = 0;
			if (lane == 0 && ld_relaxed_gpu(&f->seq) == fh + 1 && ld_acquire_gpu(&f->seq) == fh + 1) {
				ready = 1;
				cw = f->warp;
				mask = f->mask;
				all = f->all;
				t0 = f->t0;
				cseq = f->cseq;
			}
			if (!__shfl_sync(FULL_MASK, ready, 0)) break;
			cw = __shfl_sync(FULL_MASK, cw, 0);
			mask = __shfl_sync(FULL_MASK, mask, 0);
			all = __shfl_sync(FULL_MASK, all, 0);
			t0 = __shfl_sync(FULL_MASK, t0, 0);
			// The prepare that holds the turn is this warp's: its slots
			// get the finalized transactions' entries and null ones.
			const u32 slots = ctl->prep_slots;
			if (ctl->prep_cw != cw || (mask & ~slots)) {
				if (lane == 0) stm_error(g, STM_ERR_FINALIZE, p, cw);
				break;
			}
			__syncwarp();
			if (lane == 0) {
				ctl->prep_cw = STM_EMPTY;
				ctl->prep_slots = 0;
			}
			stm_log_insert(g, L, p, lane, cw, slots, mask, all, t0);
			// Answer the client: its write sets were read (release: after
			// those reads).
			__syncwarp();
			if (lane == 0) st_release_gpu((u32*)g->reply + (u64)cw * g->servers + p, cseq);
			fh++;
			idle_round = false;
		}
		if (idle_round) {
			u32 fin = 0;
			if (lane == 0)
				fin = ld_relaxed_gpu(&dctl[DCTL_CLIENTS_DONE]) == g->client_warps &&
				      ld_relaxed_gpu((u64*)g->fin_tail + (u64)p * CTL_SPACING) == fh;
			if (__shfl_sync(FULL_MASK, fin, 0)) break;
			__nanosleep(100);
		}
	}
	if (lane == 0) ctl->exit = 1;
}

// stm_server: one block per partition (blockIdx.x = p), alone on its SM
// (it asks for all the shared memory a block may have); warp 0 receives
// finalize messages, warps 1.. take and serve requests. Invariant: the log
// lists this partition's commits in timestamp order; entries [tail, head)
// are intact.
extern "C" __global__ void __launch_bounds__(STM_SERVER_WARPS * 32, 1) stm_server(const stm_globals* __restrict__ gp) {
	extern __shared__ __align__(16) u8 stm_smem[];
	if (stm_log_bytes(gp) > gp->smem) { // Go checks first; this is the safety net
		if (threadIdx.x == 0) stm_error(gp, STM_ERR_SMEM, stm_log_bytes(gp), gp->smem);
		return;
	}
	stm_copy_globals((stm_globals*)stm_smem, gp);
	const stm_globals* g = (const stm_globals*)stm_smem;
	stm_log L = stm_log_at(g, stm_smem);
	const u32 p = blockIdx.x;
	const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const u64 deadline = globaltimer_ns() + g->limit_ns;
	if (threadIdx.x == 0) {
		L.ctl->head = L.ctl->tail = L.ctl->rsv = L.ctl->pool_head = L.ctl->floor_ts = L.ctl->next_ts = 0;
		L.ctl->prep_slots = 0;
		L.ctl->prep_cw = STM_EMPTY;
		L.ctl->exit = 0;
		L.ctl->claim = 0;
	}
	if (threadIdx.x < STM_WORKERS) L.ctl->offer[threadIdx.x].slot = ~0ull;
	__syncthreads();
	if (threadIdx.x == 0) {
		__threadfence_system();
		st_relaxed_sys(&stm_hctl(g)[HCTL_SERVERS_UP + p], 1);
	}
	if (warp == 0)
		stm_receiver(g, L, p, lane, deadline);
	else
		stm_worker(g, L, p, warp - 1, lane, deadline);
}
