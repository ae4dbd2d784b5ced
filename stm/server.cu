// stm/server.cu: CSMV's server side: one block per partition holding the log
// of recent commits in shared memory; a receiver warp hands requests to
// worker warps, which validate and log them (device.cuh describes the
// protocol).

#include "stm/device.cuh"

// A worker's scratch for batch validation: the request's items in an
// open-addressing table (key: item, STM_EMPTY when free; rd and wr: the
// lanes that read and wrote it), the lanes' snapshots, their writes of
// this partition (STM_SPL per lane, in order) and the conflicts found.
struct stm_scratch {
	u32 key[STM_TABLE];
	u32 rd[STM_TABLE];
	u32 wr[STM_TABLE];
	u32 witem[32 * STM_SPL];
	u64 snap[32];
	u32 rw, ww, lf, pad;
	u32 bloom[32]; // the per-transaction path's filter of one transaction's items
};

// The shared memory of a server block: the log (entry timestamps, pool
// positions and item counts, then the item pool; the sizes are the run's),
// its control words, the workers' mail and scratch.
struct stm_log_ctl {
	volatile u64 head, tail;  // entries [tail, head) are present
	volatile u64 pool_head;   // next absolute pool position
	volatile u64 floor_ts;    // newest timestamp that left the log
	volatile u64 next_ts;     // the timestamp counter when there is one server
	volatile u32 lock;        // 0 free; worker + 1; LOCK_PREPARED | client warp
	volatile u32 exit;        // the receiver says: leave
	volatile u32 mail[STM_WORKERS];   // 1: a request is waiting in the fields below
	u32 mail_warp[STM_WORKERS], mail_mask[STM_WORKERS], mail_kind[STM_WORKERS], mail_seq[STM_WORKERS];
	stm_scratch scratch[STM_WORKERS];
};
static_assert(sizeof(stm_log_ctl) <= STM_CTL_BYTES0 + STM_CTL_BYTES_PER_WORKER * STM_WORKERS,
              "stm_log_ctl outgrew the size layout_gpu.go reserves for it");

struct stm_log {
	u64* ts;    // [log_e]
	u64* pos;   // [log_e]
	int* cnt;   // [log_e]; STM_WILDCARD: items not listed
	u32* pool;  // [log_a]
	stm_log_ctl* ctl;
};

// stm_log_bytes is the shared memory a server of a run needs: a copy of
// the globals, the log and its control words.
__device__ __forceinline__ u64 stm_log_bytes(const stm_globals* g) {
	return sizeof(stm_globals) + 20 * g->log_e + sizeof(stm_log_ctl) + 4 * g->log_a;
}

__device__ __forceinline__ stm_log stm_log_at(const stm_globals* g, u8* smem) {
	stm_log l;
	l.ts = (u64*)(smem + sizeof(stm_globals));
	l.pos = l.ts + g->log_e;
	l.ctl = (stm_log_ctl*)(l.pos + g->log_e);
	l.cnt = (int*)(l.ctl + 1);
	l.pool = (u32*)(l.cnt + g->log_e);
	return l;
}

// Servers read what clients wrote through L2 (__ldcg): a server SM's L1
// may hold lines of a client thread's previous transaction.
__device__ __forceinline__ u32 cg32(const u64 base, u64 i) { return __ldcg((const unsigned int*)base + i); }
__device__ __forceinline__ u64 cg64(const u64 base, u64 i) { return __ldcg((const unsigned long long*)base + i); }

// stm_in_set reports whether item is among a transaction's reads (1) or
// only its writes (2).
__device__ u32 stm_in_set(const stm_globals* g, u32 tid, u32 nr, u32 nw, u32 item) {
	for (u32 j = 0; j < nr; j++)
		if (cg32(g->rs_item, (u64)tid * (u32)g->r_cap + j) == item) return 1;
	for (u32 j = 0; j < nw; j++)
		if (cg32(g->ws_item, (u64)tid * (u32)g->w_cap + j) == item) return 2;
	return 0;
}

// stm_validate checks client thread tid's transaction (snapshot snap)
// against the log entries [lo, hi) with the whole warp: lane j takes
// entries hi-1-j, hi-1-j-32, ... down to the first not newer than the
// snapshot. Entries read while being evicted are caught by the floor check
// after a fence (the evicting warp raises the floor before it overwrites).
// Returns 0, or 1 + the cause. All lanes call it with the same arguments.
// (The path of transactions too large for the batch table.)
__device__ u32 stm_validate(const stm_globals* g, stm_log& L, u32* bloom, u32 p, u32 lane, u32 tid, u64 snap,
                            u64 lo, u64 hi) {
	const u32 nr = cg32(g->tx_nr, tid), nw = cg32(g->tx_nw, tid);
	const u64 emask = g->log_e - 1, amask = g->log_a - 1;
	bloom[lane] = 0;
	__syncwarp();
	for (u32 j = lane; j < nr; j += 32) {
		const u32 it = cg32(g->rs_item, (u64)tid * (u32)g->r_cap + j);
		if (stm_partition(g, it) == p) {
			const u32 h = stm_hash10(it);
			atomicOr(&bloom[h >> 5], 1u << (h & 31));
		}
	}
	for (u32 j = lane; j < nw; j += 32) {
		const u32 it = cg32(g->ws_item, (u64)tid * (u32)g->w_cap + j);
		if (stm_partition(g, it) == p) {
			const u32 h = stm_hash10(it);
			atomicOr(&bloom[h >> 5], 1u << (h & 31));
		}
	}
	__syncwarp();
	u32 conf = L.ctl->floor_ts > snap ? 1 + STM_LOG_FULL : 0;
	for (long long a = (long long)hi - 1 - lane; a >= (long long)lo && !conf; a -= 32) {
		const u64 e = (u64)a & emask;
		const u64 ts = L.ts[e];
		if (ts <= snap) break;
		const int c = L.cnt[e];
		if (c == STM_WILDCARD) {
			conf = 1 + STM_LOG_FULL;
			break;
		}
		const u64 pos = L.pos[e];
		for (int k = 0; k < c; k++) {
			const u32 it = L.pool[(pos + k) & amask];
			const u32 h = stm_hash10(it);
			if (!(bloom[h >> 5] & (1u << (h & 31)))) continue;
			const u32 in = stm_in_set(g, tid, nr, nw, it);
			if (in == 1) {
				conf = 1 + STM_READ_WRITE;
				break;
			}
			if (in == 2) conf = 1 + STM_WRITE_WRITE;
		}
	}
	__threadfence_block();
	if (!conf && L.ctl->floor_ts > snap) conf = 1 + STM_LOG_FULL;
	const u32 rw = __ballot_sync(FULL_MASK, conf == 1 + STM_READ_WRITE);
	const u32 ww = __ballot_sync(FULL_MASK, conf == 1 + STM_WRITE_WRITE);
	const u32 lf = __ballot_sync(FULL_MASK, conf == 1 + STM_LOG_FULL);
	return rw ? 1 + STM_READ_WRITE : ww ? 1 + STM_WRITE_WRITE : lf ? 1 + STM_LOG_FULL : 0;
}

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

// stm_log_insert logs the transactions of lanes (of client warp cw), in
// lane order, with timestamps t0 + rank in all: their items of partition
// p, read from the clients' write sets. The caller holds the log's lock
// (or is the receiver finalizing for the client that holds it). Evictions
// raise the floor before their slots are reused; an entry is published by
// advancing head after it is written. All lanes call it.
__device__ void stm_log_insert(const stm_globals* g, stm_log& L, u32 p, u32 lane, u32 cw, u32 lanes, u32 all, u64 t0) {
	const u64 emask = g->log_e - 1, amask = g->log_a - 1;
	for (u32 m = lanes; m; m &= m - 1) {
		const u32 l = __ffs(m) - 1;
		const u32 tid = cw * 32 + l;
		const u32 nw = cg32(g->tx_nw, tid);
		const u64 wb = (u64)tid * (u32)g->w_cap;
		u32 c = 0;
		for (u32 j = lane; j < nw; j += 32) c += stm_partition(g, cg32(g->ws_item, wb + j)) == p;
		c = __reduce_add_sync(FULL_MASK, c);
		if (c == 0) continue; // it only read in this partition
		const bool wild = c > g->log_w;
		const u64 base = L.ctl->pool_head;
		const u64 next_pool = base + (wild ? 0 : c);
		if (lane == 0) {
			u64 tail = L.ctl->tail, head = L.ctl->head;
			while (tail < head) {
				const u64 e = tail & emask;
				const bool slot = head - tail >= g->log_n;
				const bool items = L.cnt[e] > 0 && L.pos[e] + g->log_w < next_pool;
				if (!slot && !items) break;
				L.ctl->floor_ts = L.ts[e];
				tail++;
			}
			L.ctl->tail = tail;
		}
		__threadfence_block();
		__syncwarp();
		if (!wild) {
			u32 off = 0;
			for (u32 j0 = 0; j0 < nw; j0 += 32) {
				const u32 j = j0 + lane;
				const u32 it = j < nw ? cg32(g->ws_item, wb + j) : 0;
				const bool in = j < nw && stm_partition(g, it) == p;
				const u32 b = __ballot_sync(FULL_MASK, in);
				if (in) L.pool[(base + off + __popc(b & lanemask_lt(lane))) & amask] = it;
				off += __popc(b);
			}
		}
		__syncwarp();
		if (lane == 0) {
			const u64 head = L.ctl->head;
			const u64 e = head & emask;
			L.ts[e] = t0 + __popc(all & lanemask_lt(l));
			L.pos[e] = base;
			L.cnt[e] = wild ? STM_WILDCARD : (int)c;
			L.ctl->pool_head = next_pool;
			__threadfence_block();
			L.ctl->head = head + 1;
		}
		__syncwarp();
	}
}

// stm_log_insert_batch logs the committing lanes ok of a batch-validated
// request at once, from the worker's scratch: lane l's entry is the log's
// head + its rank, with timestamp t0 + its rank in ok and its cl writes of
// this partition (S->witem). The caller holds the lock and has checked
// that the entries and their items fit the log (m <= log_n, sum cl <=
// log_w). All lanes call it.
__device__ void stm_log_insert_batch(const stm_globals* g, stm_log& L, stm_scratch* S, u32 lane, u32 ok, u32 cl, u64 t0) {
	const u64 emask = g->log_e - 1, amask = g->log_a - 1;
	const bool mine = ((ok >> lane) & 1) && cl > 0;
	const u32 ents = __ballot_sync(FULL_MASK, mine);
	const u32 m = __popc(ents);
	// Exclusive prefix sum of the items of the entries.
	u32 incl = mine ? cl : 0;
	for (int o = 1; o < 32; o <<= 1) {
		const u32 v = __shfl_up_sync(FULL_MASK, incl, o);
		if (lane >= (u32)o) incl += v;
	}
	const u32 total = __shfl_sync(FULL_MASK, incl, 31);
	const u32 excl = incl - (mine ? cl : 0);
	const u64 head = L.ctl->head, base = L.ctl->pool_head;
	const u64 next_pool = base + total;
	if (lane == 0) {
		u64 tail = L.ctl->tail;
		while (tail < head) {
			const u64 e = tail & emask;
			const bool slot = head + m - tail > g->log_n;
			const bool items = L.cnt[e] > 0 && L.pos[e] + g->log_w < next_pool;
			if (!slot && !items) break;
			L.ctl->floor_ts = L.ts[e];
			tail++;
		}
		L.ctl->tail = tail;
	}
	__threadfence_block();
	__syncwarp();
	if (mine) {
		const u64 e = (head + __popc(ents & lanemask_lt(lane))) & emask;
		const u64 pos = base + excl;
		for (u32 i = 0; i < cl; i++) L.pool[(pos + i) & amask] = S->witem[lane * STM_SPL + i];
		L.ts[e] = t0 + __popc(ok & lanemask_lt(lane));
		L.pos[e] = pos;
		L.cnt[e] = (int)cl;
	}
	__threadfence_block();
	__syncwarp();
	if (lane == 0) {
		L.ctl->pool_head = next_pool;
		__threadfence_block();
		L.ctl->head = head + m;
	}
	__syncwarp();
}

// A request a worker serves, as each lane sees it (lane l: client lane l).
struct stm_job {
	u32 cw, mask, kind, seq; // client warp, its lanes, REQ_*, reply number
	bool in;                 // client lane l is in the request
	u32 tid;                 // client thread
	u64 snap, min_snap;      // lane's snapshot (~0 when not in), the request's oldest
	u32 nr, nw;              // lane's read and write set sizes
	bool fast;               // validated with the table: every transaction's accesses fit half of it
	u32 groups, grp;         // table loads the request takes (lanes in order), this lane's
	bool staged;             // every lane's writes of this partition are in S->witem
	u32 cl;                  // lane's writes of this partition (staged ones: min(cl, STM_SPL))
	u64 hv;                  // lane's group is validated up to log entry hv
};

// stm_job_load reads the request in worker me's mail and its
// transactions' snapshots and set sizes, and plans its validation: the
// table path when every transaction has at most STM_TABLE/2 accesses, in
// groups of consecutive lanes of at most STM_TABLE/2 accesses each (one
// table load and log scan per group); else one transaction at a time.
__device__ __forceinline__ void stm_job_load(const stm_globals* g, stm_log_ctl* ctl, u32 me, u32 lane, stm_job& J) {
	__threadfence_block();
	J.cw = ctl->mail_warp[me];
	J.mask = ctl->mail_mask[me];
	J.kind = ctl->mail_kind[me];
	J.seq = ctl->mail_seq[me];
	__syncwarp();
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
	const u32 a = J.nr + J.nw, half = STM_TABLE / 2;
	J.fast = __reduce_max_sync(FULL_MASK, a) <= half;
	u32 gid = 0, acc = 0;
	J.grp = 0;
	for (u32 l = 0; l < 32; l++) { // greedy: lanes in order, a new group when the table would pass half
		const u32 al = __shfl_sync(FULL_MASK, a, l);
		if (acc + al > half) {
			gid++;
			acc = 0;
		}
		acc += al;
		if (lane == l) J.grp = gid;
	}
	J.groups = gid + 1;
	J.cl = 0;
	J.staged = false;
	J.hv = 0;
}

// stm_put_write adds a written item of partition p to the table and, with
// stage, to the lane's staged writes (the first STM_SPL; *cl counts all).
__device__ __forceinline__ void stm_put_write(const stm_globals* g, stm_scratch* S, u32 p, u32 lane, u32 it, bool stage, u32* cl) {
	if (stm_partition(g, it) != p) return;
	stm_table_put(S, it, 1u << lane, true);
	if (stage && *cl < STM_SPL) S->witem[lane * STM_SPL + *cl] = it;
	(*cl)++;
}

// stm_table_fill clears the worker's table and puts in it the items of
// this partition of the lanes of group gi (lane bits in rd and wr); with
// stage, each lane also stages its writes of this partition (S->witem, at
// most STM_SPL, counted in J.cl). The first STM_SPL reads and writes are
// loaded at once: one round trip to L2. All lanes call it.
__device__ __forceinline__ void stm_table_fill(const stm_globals* g, stm_scratch* S, u32 p, u32 lane, stm_job& J, u32 gi, bool stage) {
	for (u32 i = lane; i < STM_TABLE; i += 32) {
		S->key[i] = STM_EMPTY;
		S->rd[i] = 0;
		S->wr[i] = 0;
	}
	__syncwarp();
	if (J.in && J.grp == gi) {
		const u64 rb = (u64)J.tid * (u32)g->r_cap, wb = (u64)J.tid * (u32)g->w_cap;
		const u32 nr = J.nr, nw = J.nw;
		u32 rit[STM_SPL], wit[STM_SPL];
#pragma unroll
		for (u32 j = 0; j < STM_SPL; j++) {
			rit[j] = j < nr ? cg32(g->rs_item, rb + j) : 0;
			wit[j] = j < nw ? cg32(g->ws_item, wb + j) : 0;
		}
#pragma unroll
		for (u32 j = 0; j < STM_SPL; j++)
			if (j < nr && stm_partition(g, rit[j]) == p) stm_table_put(S, rit[j], 1u << lane, false);
		for (u32 j = STM_SPL; j < nr; j++) {
			const u32 it = cg32(g->rs_item, rb + j);
			if (stm_partition(g, it) == p) stm_table_put(S, it, 1u << lane, false);
		}
		u32 cl = 0;
#pragma unroll
		for (u32 j = 0; j < STM_SPL; j++)
			if (j < nw) stm_put_write(g, S, p, lane, wit[j], stage, &cl);
		for (u32 j = STM_SPL; j < nw; j++) stm_put_write(g, S, p, lane, cg32(g->ws_item, wb + j), stage, &cl);
		if (stage) J.cl = cl;
	}
	__syncwarp();
}

// stm_head_tail returns the log's head (and, in *tail, its tail) as lane 0
// reads them, in every lane.
__device__ __forceinline__ u64 stm_head_tail(stm_log_ctl* ctl, u32 lane, u64* tail) {
	u64 h = 0, t = 0;
	if (lane == 0) {
		h = ctl->head;
		t = ctl->tail;
	}
	if (tail) *tail = __shfl_sync(FULL_MASK, t, 0);
	return __shfl_sync(FULL_MASK, h, 0);
}

// stm_cause_of returns 1 + lane's conflict cause found in the scratch's
// conflict masks (read-write before write-write before log full), or 0.
__device__ __forceinline__ u32 stm_cause_of(const stm_scratch* S, u32 lane, u32 extra_lf) {
	const u32 bit = 1u << lane;
	return (S->rw & bit) ? 1 + STM_READ_WRITE : (S->ww & bit) ? 1 + STM_WRITE_WRITE
	     : ((S->lf | extra_lf) & bit) ? 1 + STM_LOG_FULL : 0;
}

// stm_validate_table validates the request against the log without the
// lock, group by group: fill the table, scan the entries [tail, head),
// then those logged meanwhile, so that the scan under the lock is short.
// Returns lane's 1 + cause, or 0.
__device__ __forceinline__ u32 stm_validate_table(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 lane, stm_job& J, u64* scanned) {
	stm_log_ctl* ctl = L.ctl;
	S->snap[lane] = J.snap;
	if (lane == 0) S->rw = S->ww = S->lf = 0;
	__syncwarp();
	for (u32 gi = 0; gi < J.groups; gi++) {
		stm_table_fill(g, S, p, lane, J, gi, true);
		u64 t0;
		u64 h0 = stm_head_tail(ctl, lane, &t0);
		*scanned += stm_scan_batch(g, L, S, lane, t0, h0, J.min_snap);
		const u64 hc = stm_head_tail(ctl, lane, nullptr);
		if (hc != h0) {
			__syncwarp();
			*scanned += stm_scan_batch(g, L, S, lane, h0, hc, J.min_snap);
			h0 = hc;
		}
		if (J.grp == gi) J.hv = h0;
		__syncwarp();
	}
	J.staged = __reduce_max_sync(FULL_MASK, J.cl) <= STM_SPL;
	__threadfence_block();
	__syncwarp();
	const u32 fl = __ballot_sync(FULL_MASK, J.in && ctl->floor_ts > J.snap);
	return J.in ? stm_cause_of(S, lane, fl) : 0;
}

// stm_revalidate_table validates the surviving lanes of a table-validated
// request against the entries logged since each group's scan, up to h1,
// under the lock. The table holds the last group; the others are loaded
// again. Returns lane's cause as updated.
__device__ __forceinline__ u32 stm_revalidate_table(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 lane, stm_job& J, u64 h1,
                                    u32 cause, u64* scanned) {
	for (int gi = (int)J.groups - 1; gi >= 0; gi--) {
		const u32 members = __ballot_sync(FULL_MASK, J.in && J.grp == (u32)gi);
		if (!members) continue;
		const u64 lo = __shfl_sync(FULL_MASK, J.hv, __ffs(members) - 1);
		if (lo == h1) continue;
		if (gi != (int)J.groups - 1) stm_table_fill(g, S, p, lane, J, gi, false);
		*scanned += stm_scan_batch(g, L, S, lane, lo, h1, J.min_snap);
		__syncwarp();
	}
	if (!cause && J.in) cause = stm_cause_of(S, lane, 0);
	return cause;
}

// stm_validate_each validates the request's transactions one at a time
// with the whole warp against the entries [lo, hi) (the path of
// transactions too large for the table), the lanes of which. Returns
// lane's cause as updated.
__device__ __forceinline__ u32 stm_validate_each(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 lane, const stm_job& J, u32 which,
                                 u64 lo, u64 hi, u32 cause) {
	for (u32 m = which; m; m &= m - 1) {
		const u32 l = __ffs(m) - 1;
		const u64 s = __shfl_sync(FULL_MASK, J.snap, l);
		const u32 c = stm_validate(g, L, S->bloom, p, lane, J.cw * 32 + l, s, lo, hi);
		if (lane == l && c) cause = c;
	}
	return cause;
}

// stm_lock takes the log's lock for worker me (lane 0 spins, backing off);
// false: the run failed meanwhile.
__device__ __forceinline__ bool stm_lock(const stm_globals* g, stm_log_ctl* ctl, u32 me, u32 lane, u64 deadline, u64* cy_lock) {
	bool quit = false;
	if (lane == 0) {
		u32 w = 0;
		const u64 l0 = clock64();
		while (atomicCAS((u32*)&ctl->lock, 0u, me + 1) != 0u) {
			if (stm_wait_check(g, deadline, &w, STM_AT_LOCK)) {
				quit = true;
				break;
			}
			__nanosleep(32);
		}
		*cy_lock += clock64() - l0;
	}
	quit = __shfl_sync(FULL_MASK, quit, 0);
	__threadfence_block();
	return !quit;
}

// stm_commit_single gives the survivors ok of a single-partition request
// consecutive timestamps (one reservation: in shared memory with one
// server, on the global counter with several), logs them (staged writes
// at once, else from the write sets) and releases the lock. Returns the
// first timestamp (0 when none survived). All lanes call it.
__device__ __forceinline__ u64 stm_commit_single(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 lane, const stm_job& J, u32 ok, u64* fast_n) {
	stm_log_ctl* ctl = L.ctl;
	u64 first = 0;
	if (ok) {
		if (lane == 0) {
			if (g->servers == 1) {
				first = ctl->next_ts + 1;
				ctl->next_ts = first + __popc(ok) - 1;
			} else {
				first = atomicAdd((unsigned long long*)g->next, (unsigned long long)__popc(ok)) + 1;
			}
		}
		first = __shfl_sync(FULL_MASK, first, 0);
		const u32 items = __reduce_add_sync(FULL_MASK, ((ok >> lane) & 1) ? J.cl : 0);
		if (J.fast && J.staged && (u64)__popc(ok) <= g->log_n && items <= g->log_w) {
			stm_log_insert_batch(g, L, S, lane, ok, J.cl, first);
			(*fast_n)++;
		} else {
			stm_log_insert(g, L, p, lane, J.cw, ok, ok, first);
		}
	}
	__threadfence_block();
	if (lane == 0) ctl->lock = 0;
	return first;
}

// stm_reply writes each lane's result (a timestamp, STM_RES_PREPARED, or
// STM_RES_FLAG | cause), then the reply word the client polls, and frees
// the mail.
__device__ __forceinline__ void stm_reply(const stm_globals* g, stm_log_ctl* ctl, u32 p, u32 me, u32 lane, const stm_job& J, u32 cause, u32 ok, u64 first) {
	if (J.in) {
		u64 r;
		if (cause)
			r = STM_RES_FLAG | (cause - 1);
		else if (J.kind == REQ_SINGLE)
			r = first + __popc(ok & lanemask_lt(lane));
		else
			r = STM_RES_PREPARED;
		st_relaxed_gpu((u64*)g->res + J.cw * 32 + lane, r);
	}
	__threadfence();
	__syncwarp();
	if (lane == 0) {
		st_release_gpu((u32*)g->reply + (u64)J.cw * g->servers + p, J.seq);
		ctl->mail[me] = 0;
	}
}

// stm_worker serves the requests the receiver leaves in its mail: thread
// mapping: one warp per request, lane l answers client lane l. Steps:
// load the request, validate it without the lock (the table path or one
// transaction at a time), take the lock, validate against what was logged
// meanwhile, then commit (single partition: timestamps, log, unlock) or
// keep the lock for the client (prepare), and reply.
__device__ void stm_worker(const stm_globals* g, stm_log& L, u32 p, u32 me, u32 lane, u64 deadline) {
	stm_log_ctl* ctl = L.ctl;
	stm_scratch* S = &ctl->scratch[me];
	u64 cy_validate = 0, cy_insert = 0, cy_lock = 0, fast_n = 0, batched = 0, scanned = 0;
	u32 n = 0;
	for (;;) {
		u32 state = 0; // lane 0 reads the shared words, the warp follows
		if (lane == 0) state = ctl->exit ? 2 : ctl->mail[me] ? 1 : 0;
		state = __shfl_sync(FULL_MASK, state, 0);
		if (state == 2) break;
		if (state == 0) {
			u32 quit = lane == 0 && stm_wait_check(g, ~0ull, &n, STM_AT_WORKER); // the receiver keeps the deadline
			if (__shfl_sync(FULL_MASK, quit, 0)) break;
			__nanosleep(64);
			continue;
		}
		stm_job J;
		stm_job_load(g, ctl, me, lane, J);
		const u64 c0 = clock64();
		u32 cause = 0; // lane l: 1 + cause of client lane l's abort
		u64 h0 = 0;
		if (J.fast) {
			cause = stm_validate_table(g, L, S, p, lane, J, &scanned);
			batched++;
		} else {
			u64 t0;
			h0 = stm_head_tail(ctl, lane, &t0);
			cause = stm_validate_each(g, L, S, p, lane, J, J.mask, t0, h0, 0);
		}
		u32 ok = __ballot_sync(FULL_MASK, J.in && cause == 0);
		const u64 c1 = clock64();
		if (!stm_lock(g, ctl, me, lane, deadline, &cy_lock)) break;
		const u64 h1 = stm_head_tail(ctl, lane, nullptr);
		if (ok) {
			if (J.fast)
				cause = stm_revalidate_table(g, L, S, p, lane, J, h1, cause, &scanned);
			else if (h1 != h0)
				cause = stm_validate_each(g, L, S, p, lane, J, ok, h0, h1, cause);
		}
		// Entries evicted meanwhile (the floor only moves under the lock).
		if (J.in && !cause && ctl->floor_ts > J.snap) cause = 1 + STM_LOG_FULL;
		ok = __ballot_sync(FULL_MASK, J.in && cause == 0);
		u64 first = 0;
		if (J.kind == REQ_SINGLE) {
			first = stm_commit_single(g, L, S, p, lane, J, ok, &fast_n);
		} else {
			__threadfence_block();
			if (lane == 0) ctl->lock = ok ? (LOCK_PREPARED | J.cw) : 0;
		}
		stm_reply(g, ctl, p, me, lane, J, cause, ok, first);
		cy_validate += (c1 - c0) * __popc(J.mask);
		cy_insert += (clock64() - c1) * __popc(J.mask);
		__syncwarp();
	}
	if (lane == 0) {
		u64* counters = (u64*)g->counters;
		atomicAdd((unsigned long long*)&counters[CNT_CY_VALIDATE], (unsigned long long)cy_validate);
		atomicAdd((unsigned long long*)&counters[CNT_CY_INSERT], (unsigned long long)cy_insert);
		atomicAdd((unsigned long long*)&counters[CNT_FAST_INSERTS], (unsigned long long)fast_n);
		atomicAdd((unsigned long long*)&counters[CNT_BATCHED], (unsigned long long)batched);
		atomicAdd((unsigned long long*)&counters[CNT_SCANNED], (unsigned long long)scanned);
		atomicAdd((unsigned long long*)&counters[CNT_CY_LOCK], (unsigned long long)cy_lock);
	}
}

// stm_receiver hands requests to idle workers (up to 32 at a look, in
// queue order), logs finalized multi-partition transactions and releases
// the lock they held, mirrors the host's stop and abort flags (server 0),
// and ends the server when every client warp has left.
__device__ void stm_receiver(const stm_globals* g, stm_log& L, u32 p, u32 lane, u64 deadline) {
	stm_log_ctl* ctl = L.ctl;
	u64* dctl = stm_dctl(g);
	u64* hctl = stm_hctl(g);
	u64 rh = 0, fh = 0;
	u64 requests = 0;
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
			stm_log_insert(g, L, p, lane, cw, mask, all, t0);
			__threadfence_block();
			if (lane == 0) ctl->lock = 0;
			// Answer the client: its write sets were read (release: after
			// those reads).
			__syncwarp();
			if (lane == 0) st_release_gpu((u32*)g->reply + (u64)cw * g->servers + p, cseq);
			fh++;
			idle_round = false;
		}
		// Requests: the ready prefix of the next 32, to idle workers.
		const u64 s = rh + lane;
		const stm_req* r = stm_req_slot(g, p, s);
		bool ready = ld_relaxed_gpu(&r->seq) == s + 1;
		if (__any_sync(FULL_MASK, ready)) ready = ready && ld_acquire_gpu(&r->seq) == s + 1;
		const u32 rdy = __ballot_sync(FULL_MASK, ready);
		const u32 k = rdy == FULL_MASK ? 32 : __ffs(~rdy) - 1;
		if (k) {
			const u32 idle = __ballot_sync(FULL_MASK, lane < STM_WORKERS && ctl->mail[lane < STM_WORKERS ? lane : 0] == 0);
			const u32 give = min(k, (u32)__popc(idle));
			if (lane < give) {
				u32 w = idle;
				for (u32 i = 0; i < lane; i++) w &= w - 1;
				w = __ffs(w) - 1;
				ctl->mail_warp[w] = r->warp;
				ctl->mail_mask[w] = r->mask;
				ctl->mail_kind[w] = r->kind;
				ctl->mail_seq[w] = r->cseq;
				__threadfence_block();
				ctl->mail[w] = 1;
			}
			rh += give;
			requests += give;
			if (give) idle_round = false;
		}
		if (idle_round) {
			u32 fin = 0;
			if (lane == 0)
				fin = ld_relaxed_gpu(&dctl[DCTL_CLIENTS_DONE]) == g->client_warps &&
				      ld_relaxed_gpu((u64*)g->req_tail + (u64)p * CTL_SPACING) == rh &&
				      ld_relaxed_gpu((u64*)g->fin_tail + (u64)p * CTL_SPACING) == fh;
			if (__shfl_sync(FULL_MASK, fin, 0)) break;
			__nanosleep(100);
		}
	}
	if (lane == 0) {
		ctl->exit = 1;
		atomicAdd((unsigned long long*)&((u64*)g->counters)[CNT_REQUESTS], (unsigned long long)requests);
	}
}

// stm_server: one block per partition (blockIdx.x = p), alone on its SM
// (it asks for all the shared memory a block may have); warp 0 receives,
// warps 1.. work. Invariant: the log lists this partition's commits in
// timestamp order; entries [tail, head) are intact.
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
		L.ctl->head = L.ctl->tail = L.ctl->pool_head = L.ctl->floor_ts = L.ctl->next_ts = 0;
		L.ctl->lock = 0;
		L.ctl->exit = 0;
	}
	if (threadIdx.x < STM_WORKERS) L.ctl->mail[threadIdx.x] = 0;
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
