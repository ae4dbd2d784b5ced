// stm/stm.cu: CSMV's engine on the GPU: client and server kernels, launched
// by stm/gpu_engine.go from the host on two streams.
//
// Clients (stm_client): one transaction at a time per thread; a warp runs
// the bodies of its 32 transactions, then commits them together:
// pre-validation inside the warp (Algorithm 1 of the thesis), one request
// per server whose partition the survivors touch, write-back of the
// versions, and publication in commit order.
//
// Servers (stm_server): one block per partition of the items, resident on
// an SM of its own: warp 0 is the receiver, the others are workers. The
// log of recent commits (timestamps and written items of this partition)
// lives in shared memory. A worker takes one request (the transactions of
// one client warp) and validates it against the log entries newer than
// the transactions' snapshots. Small transactions (the common case) are
// validated as a batch: the worker puts the request's items in a small
// hash table in shared memory (item -> the lanes that read or wrote it)
// and its lanes scan the log entries, 32 at a time, once for the whole
// request. Larger ones are validated one after the other by the whole
// warp (collaborative validation: lane j checks entries head-1-j,
// head-1-j-32, ...). The worker then takes the log's lock, validates
// against the entries added meanwhile, and for a single-partition request
// reserves consecutive timestamps for the survivors with one addition
// (in shared memory when there is one server, else on the global counter),
// logs them and releases the lock. A transaction that touches several
// partitions prepares at each of its servers in ascending order (each
// keeps its lock for the client), then the client reserves one timestamp
// range and finalizes at every prepared server (the receiver logs the
// survivors and releases the lock). Every log therefore lists its commits
// in timestamp order, and a transaction is validated against all commits
// between its snapshot and its timestamp that touched its items.
//
// Publication: a batch of consecutive timestamps (one reservation) is
// written back by its client warp, which then marks it done in a ring of
// markers (done[first % R] = last) and advances the commit clock over
// every batch that is done in order (a compare-and-swap from the batch
// before it to its last timestamp); nobody waits for an earlier batch to
// publish. A warp waits for the clock to pass its own batches before it
// starts new transactions, which bounds the timestamps reserved but not
// published by the client threads (R is at least twice that).
//
// Every loop that waits checks the run's deadline (the GPU's global timer)
// and the error word, so a bug ends the run with an error, never a hang;
// waits back off with __nanosleep.
//
// The shape of a run (versions per item k, read and write set capacity per
// thread r_cap and w_cap, history mode hist_mode: 0 none, 1 committed, 2
// also aborted attempts; log entries log_n in a ring of log_e and written
// items log_w in a pool of log_a per server, both rings powers of two)
// comes in stm_globals, so one compiled program serves every shape.
// Defines from Go: STM_SERVER_WARPS, STM_CLIENT_BLOCK and the layout
// constants of stm/gpu_layout.go (STM_TABLE, STM_SPL among them).
#include "warpkv/types.cuh"
#include "stm/globals.cuh"
#include "stm/stm.cuh"
#include "stm/workload.cuh"

#define STM_WORKERS (STM_SERVER_WARPS - 1)
#define REQ_SINGLE 1u
#define REQ_PREPARE 2u
#define LOCK_PREPARED 0x80000000u
#define STM_EMPTY 0xFFFFFFFFu

// A commit request of one client warp at one server; ready when seq equals
// its ring position + 1.
struct stm_req {
	u64 seq;
	u32 warp, mask, kind, cseq; // cseq: the warp's request number, echoed in its reply
};
// A finalize message: log the transactions of mask (lanes of warp) with
// timestamps t0 + their rank in all, then release the log's lock.
struct stm_fin {
	u64 seq;
	u64 t0;
	u32 warp, mask, all, pad;
};

// stm_copy_globals copies the run's parameters into shared memory (all
// threads of the block call it): the kernels read them constantly, and
// from global memory every read would go to L2, since the acquiring loads
// of the protocol invalidate the SM's L1.
__device__ __forceinline__ void stm_copy_globals(stm_globals* s, const stm_globals* gp) {
	for (u32 i = threadIdx.x; i < sizeof(stm_globals) / 8; i += blockDim.x) ((u64*)s)[i] = ((const u64*)gp)[i];
	__syncthreads();
}

__device__ __forceinline__ u64* stm_dctl(const stm_globals* g) { return (u64*)g->dctl; }
__device__ __forceinline__ u64* stm_hctl(const stm_globals* g) { return (u64*)g->hctl; }

// stm_error records the run's first error (device word for the kernels,
// mapped words for the host).
__device__ void stm_error(const stm_globals* g, u64 code, u64 d0, u64 d1) {
	u64* d = stm_dctl(g);
	if (atomicCAS((unsigned long long*)&d[DCTL_ERROR], 0ull, (unsigned long long)code) == 0ull) {
		d[DCTL_DETAIL0] = d0;
		d[DCTL_DETAIL1] = d1;
		u64* h = stm_hctl(g);
		st_relaxed_sys(&h[HCTL_DETAIL0], d0);
		st_relaxed_sys(&h[HCTL_DETAIL1], d1);
		__threadfence_system();
		st_relaxed_sys(&h[HCTL_ERROR], code);
	}
}

__device__ __forceinline__ bool stm_errored(const stm_globals* g) {
	return ld_relaxed_gpu(&stm_dctl(g)[DCTL_ERROR]) != 0;
}

// stm_wait_check is called in wait loops: every 32nd call it checks the
// error word and the deadline; true means give up.
__device__ __forceinline__ bool stm_wait_check(const stm_globals* g, u64 deadline, u32* n, u32 where) {
	if ((++*n & 31) != 0) return false;
	if (stm_errored(g)) return true;
	if (globaltimer_ns() > deadline) {
		stm_error(g, STM_ERR_DEADLINE, where, 0);
		return true;
	}
	return false;
}

// stm_backoff sleeps *ns nanoseconds and doubles it up to limit.
__device__ __forceinline__ void stm_backoff(u32* ns, u32 limit) {
	__nanosleep(*ns);
	*ns = min(*ns * 2, limit);
}

__device__ __forceinline__ u64 warp_or64(u64 v) {
	u32 lo = __reduce_or_sync(FULL_MASK, (u32)v), hi = __reduce_or_sync(FULL_MASK, (u32)(v >> 32));
	return ((u64)hi << 32) | lo;
}
__device__ __forceinline__ u64 warp_min64(u64 v) {
	for (int o = 16; o > 0; o >>= 1) {
		u64 w = __shfl_xor_sync(FULL_MASK, v, o);
		v = w < v ? w : v;
	}
	return v;
}
__device__ __forceinline__ u64 warp_max64(u64 v) {
	for (int o = 16; o > 0; o >>= 1) {
		u64 w = __shfl_xor_sync(FULL_MASK, v, o);
		v = w > v ? w : v;
	}
	return v;
}
__device__ __forceinline__ u32 lanemask_lt(u32 lane) { return (1u << lane) - 1; }

// Bloom, signature and table hashes of an item.
__device__ __forceinline__ u32 stm_hash10(u32 item) { return (item * 0x9E3779B1u) >> 22; }
__device__ __forceinline__ u32 stm_hash6(u32 item) { return (item * 0x9E3779B1u) >> 26; }

// ---- client side ---------------------------------------------------------

// stm_install_all writes this lane's versions (ts, its writes) over the
// oldest slot of each item; the commit protocol makes this transaction the
// item's only writer now. A slot is first marked empty (STM_NO_VERSION),
// then, after a fence, gets its value, its version and becomes the head:
// a reader that validated a slot's old version (stm_ring_read reads
// version, value, version) cannot have read the new value. The value needs
// no fence before its version: a reader accepts version ts only once the
// clock has passed ts, which happens after the final fence of the batch.
// All lanes call it (two fences per warp).
__device__ void stm_install_all(const stm_globals* g, const stm_tx* tx, u64 ts) {
	const u32 k = (u32)g->k;
	const u32 nw = ts ? tx->nw : 0;
	const u32* wi = (const u32*)g->ws_item + (u64)tx->tid * (u32)g->w_cap;
	const u64* wv = (const u64*)g->ws_val + (u64)tx->tid * (u32)g->w_cap;
	u64* vers = (u64*)g->vers;
	u64* vals = (u64*)g->vals;
	u32* head = (u32*)g->head;
	for (u32 j = 0; j < nw; j++) {
		const u32 it = wi[j];
		const u32 h = ld_relaxed_gpu(head + it);
		st_relaxed_gpu(vers + (u64)it * k + (h + 1 == k ? 0 : h + 1), STM_NO_VERSION);
	}
	__threadfence();
	for (u32 j = 0; j < nw; j++) {
		const u32 it = wi[j];
		const u32 h = ld_relaxed_gpu(head + it);
		const u32 s = h + 1 == k ? 0 : h + 1;
		st_relaxed_gpu(vals + (u64)it * k + s, wv[j]);
		st_relaxed_gpu(vers + (u64)it * k + s, ts);
		st_relaxed_gpu(head + it, s);
	}
	__threadfence();
	__syncwarp();
}

// stm_mark_done marks the batches of this round done after their
// write-back: lanes with ts != 0 and the same key (the server of a
// single-partition batch, or 64 for the multi-partition batch) hold
// consecutive timestamps from one reservation; the lane with the first
// one stores done[first % R] = last. Returns the largest timestamp marked
// (warp-uniform; 0 if none). All lanes call it after stm_install_all.
__device__ u64 stm_mark_done(const stm_globals* g, u64 ts, u32 key, u32 lane) {
	bool pend = ts != 0;
	u64 top = 0;
	while (__any_sync(FULL_MASK, pend)) {
		const u64 first = warp_min64(pend ? ts : ~0ull);
		const u32 src = __ffs(__ballot_sync(FULL_MASK, pend && ts == first)) - 1;
		const u32 b = __shfl_sync(FULL_MASK, key, src);
		const u32 grp = __ballot_sync(FULL_MASK, pend && key == b);
		const u64 last = first + __popc(grp) - 1;
		if (lane == src) st_release_gpu((u64*)g->done + (first & g->done_mask), last);
		if ((grp >> lane) & 1) pend = false;
		top = last > top ? last : top;
	}
	return top;
}

// stm_advance moves the commit clock over every batch that is done in
// order, starting from the clock it reads, and returns the clock it last
// saw. One lane calls it. A batch [c+1, d] is done when done[(c+1) % R]
// holds d > c (a stale marker holds an older, published batch's last
// timestamp, <= c). The marker is read, then a fence, then the clock moves
// by compare-and-swap: the batch's write-back happens before any reader
// acquires the new clock.
__device__ u64 stm_advance(const stm_globals* g) {
	u64* clock = (u64*)g->clock;
	const u64* done = (const u64*)g->done;
	u64 c = ld_relaxed_gpu(clock);
	for (;;) {
		u64 d = ld_relaxed_gpu(done + ((c + 1) & g->done_mask));
		if (d <= c) return c;
		// Batches done in a row: take them all with one swap.
		for (int i = 0; i < 8; i++) {
			const u64 e = ld_relaxed_gpu(done + ((d + 1) & g->done_mask));
			if (e <= d) break;
			d = e;
		}
		__threadfence();
		const u64 old = atomicCAS((unsigned long long*)clock, (unsigned long long)c, (unsigned long long)d);
		c = old == c ? d : old;
	}
}

// stm_publish waits (all lanes) until the clock has reached top, advancing
// it over done batches meanwhile. false: the run failed.
__device__ bool stm_publish(const stm_globals* g, u64 top, u32 lane, u64 deadline) {
	bool ok = true;
	if (lane == 0 && top) {
		u32 n = 0, ns = 32;
		__threadfence(); // the markers before the clock is read (store-buffering with other markers)
		while (stm_advance(g) < top) {
			if (stm_wait_check(g, deadline, &n, STM_AT_CLOCK)) {
				ok = false;
				break;
			}
			stm_backoff(&ns, 1024);
		}
	}
	return __shfl_sync(FULL_MASK, ok, 0);
}

// stm_prevalidate is Algorithm 1: a lane's update transaction conflicts
// with a lower lane's if that one wrote an item it read (read-write) or
// wrote (write-write); lanes decide in lane order, a transaction aborts if
// a conflicting lower lane commits. Write-set signatures filter the exact
// checks. All lanes call it.
__device__ void stm_prevalidate(const stm_globals* g, stm_tx* tx, bool* upd, u32 lane, u32 wbase) {
	const u32* ri = (const u32*)g->rs_item + (u64)tx->tid * (u32)g->r_cap;
	const u32* wi = (const u32*)g->ws_item + (u64)tx->tid * (u32)g->w_cap;
	u64 wsig = 0, rsig = 0;
	if (*upd) {
		for (u32 j = 0; j < tx->nw; j++) wsig |= 1ull << stm_hash6(wi[j]);
		for (u32 j = 0; j < tx->nr; j++) rsig |= 1ull << stm_hash6(ri[j]);
	}
	const u32 updmask = __ballot_sync(FULL_MASK, *upd);
	u32 crw = 0, cww = 0;
	for (u32 l = 0; l < 32; l++) {
		if (!((updmask >> l) & 1)) continue; // warp-uniform
		const u64 sig = __shfl_sync(FULL_MASK, wsig, l);
		const u32 nwl = __shfl_sync(FULL_MASK, tx->nw, l);
		if (*upd && l < lane && (sig & (rsig | wsig))) {
			const u32* wl = (const u32*)g->ws_item + (u64)(wbase + l) * (u32)g->w_cap;
			for (u32 j = 0; j < nwl; j++) {
				const u32 it = wl[j];
				bool hit = false;
				for (u32 q = 0; q < tx->nr && !hit; q++) hit = ri[q] == it;
				if (hit) {
					crw |= 1u << l;
					break;
				}
				for (u32 q = 0; q < tx->nw && !hit; q++) hit = wi[q] == it;
				if (hit) cww |= 1u << l;
			}
		}
	}
	// 0 not an update, 1 commit, 2 tentative abort, 3 abort
	u32 conf = crw | cww;
	u32 st = !*upd ? 0 : (conf ? 2 : 1);
	u32 cause = 0;
	for (u32 l = 0; l < 32; l++) {
		const u32 other = __shfl_sync(FULL_MASK, st, l);
		if ((conf >> l) & 1) {
			if (other == 1) {
				if (st != 3) cause = ((crw >> l) & 1) ? STM_READ_WRITE : STM_WRITE_WRITE;
				st = 3;
			} else if (other == 3 || other == 0) {
				conf &= ~(1u << l);
				if (!conf && st == 2) st = 1;
			}
		}
	}
	if (*upd && st == 3) {
		stm_fail(tx, STM_ST_ABORT + cause, 0);
		*upd = false;
	}
}

__device__ __forceinline__ stm_req* stm_req_slot(const stm_globals* g, u32 p, u64 s) {
	return (stm_req*)g->req_ring + (u64)p * (g->ring_mask + 1) + (s & g->ring_mask);
}
__device__ __forceinline__ stm_fin* stm_fin_slot(const stm_globals* g, u32 p, u64 s) {
	return (stm_fin*)g->fin_ring + (u64)p * (g->ring_mask + 1) + (s & g->ring_mask);
}

// stm_send queues a request at server p (one lane calls it). A server has
// at most one request of each client warp outstanding, and its ring has a
// slot for every client warp, so a slot is free when it is taken.
__device__ void stm_send(const stm_globals* g, u32 p, u32 warp, u32 mask, u32 kind, u32 cseq) {
	u64 s = atomicAdd((unsigned long long*)((u64*)g->req_tail + (u64)p * CTL_SPACING), 1ull);
	stm_req* r = stm_req_slot(g, p, s);
	r->warp = warp;
	r->mask = mask;
	r->kind = kind;
	r->cseq = cseq;
	st_release_gpu(&r->seq, s + 1);
}

// stm_send_fin queues a finalize message at server p (one lane calls it).
__device__ void stm_send_fin(const stm_globals* g, u32 p, u32 warp, u32 mask, u32 all, u64 t0) {
	u64 s = atomicAdd((unsigned long long*)((u64*)g->fin_tail + (u64)p * CTL_SPACING), 1ull);
	stm_fin* f = stm_fin_slot(g, p, s);
	f->warp = warp;
	f->mask = mask;
	f->all = all;
	f->t0 = t0;
	st_release_gpu(&f->seq, s + 1);
}

// stm_await waits (all lanes) until at least one of the servers in
// pending answered request seq of warp and returns those that did (0: the
// run failed meanwhile): lane 0 polls the reply words (relaxed loads,
// backing off), then a fence orders the reads of the results after them.
__device__ u64 stm_await(const stm_globals* g, u64 pending, u32 warp, u32 seq, u32 lane, u64 deadline) {
	const u32* rp = (const u32*)g->reply + (u64)warp * g->servers;
	u64 got = 0;
	if (lane == 0) {
		u32 n = 0, ns = 64;
		for (;;) {
			for (u64 m = pending; m; m &= m - 1) {
				const u32 p = __ffsll(m) - 1;
				if (ld_relaxed_gpu(rp + p) == seq) got |= 1ull << p;
			}
			if (got || stm_wait_check(g, deadline, &n, STM_AT_REPLY)) break;
			stm_backoff(&ns, 512);
		}
		__threadfence();
	}
	got = __shfl_sync(FULL_MASK, got, 0);
	__syncwarp();
	return got;
}

// stm_commit_warp commits the update transactions of the warp and returns
// this lane's commit timestamp (0: not committed; tx->state says why). All
// lanes call it. *quit is set when the run failed.
__device__ u64 stm_commit_warp(const stm_globals* g, stm_tx* tx, bool have, u32 lane, u32 wid, u32* seq,
                               u64 deadline, u64* cy, bool* quit) {
	const u32 wbase = wid * 32;
	bool upd = have && tx->state == STM_ST_OK && !tx->ro && tx->nw > 0;
	if (upd) {
		((u64*)g->tx_snap)[tx->tid] = tx->snap;
		((u32*)g->tx_nr)[tx->tid] = tx->nr;
		((u32*)g->tx_nw)[tx->tid] = tx->nw;
	}
	if (__ballot_sync(FULL_MASK, upd) == 0) return 0;
	__threadfence();
	u64 c0 = clock64();
	stm_prevalidate(g, tx, &upd, lane, wbase);
	u64 c1 = clock64();
	if (upd) cy[0] += c1 - c0;
	u64 ts = 0, top = 0;
	u64 cwb = 0;
	const u32 nparts = __popcll(tx->pmask);

	// Round 1: transactions of one partition, one request per server, all
	// in flight together; then their write-back and done markers.
	bool single = upd && nparts == 1;
	const u64 u1 = warp_or64(single ? tx->pmask : 0);
	if (u1) {
		*seq += 1;
		for (u64 m = u1; m; m &= m - 1) {
			const u32 p = __ffsll(m) - 1;
			const u32 lanes = __ballot_sync(FULL_MASK, single && tx->pmask == (1ull << p));
			if (lane == 0) stm_send(g, p, wid, lanes, REQ_SINGLE, *seq);
		}
		// Each server's batch is written back and marked done as soon as
		// its answer comes: a slow server does not hold up the others'
		// timestamps (and with them every client's publication).
		const u32 mine = single ? (u32)(__ffsll(tx->pmask) - 1) : 64;
		for (u64 pending = u1; pending;) {
			const u64 got = stm_await(g, pending, wid, *seq, lane, deadline);
			if (!got) {
				*quit = true;
				return 0;
			}
			pending &= ~got;
			u64 t1 = 0;
			if (mine < 64 && ((got >> mine) & 1)) {
				const u64 r = ld_relaxed_gpu((const u64*)g->res + tx->tid);
				if (r & STM_RES_FLAG)
					stm_fail(tx, STM_ST_ABORT + (u32)(r & 0xFF), 0);
				else
					t1 = r;
			}
			const u64 w0 = clock64();
			stm_install_all(g, tx, t1);
			const u64 t = stm_mark_done(g, t1, mine, lane);
			top = t > top ? t : top;
			cwb += clock64() - w0;
			if (t1) ts = t1;
		}
	}

	// Round 2: transactions of several partitions: prepare at each server
	// in ascending order, reserve one range of timestamps, finalize, then
	// the write-back and the done marker.
	bool multi = upd && nparts > 1;
	const u64 u2 = warp_or64(multi ? tx->pmask : 0);
	if (u2) {
		u64 prepared = 0;
		for (u64 m = u2; m; m &= m - 1) {
			const u32 p = __ffsll(m) - 1;
			const u32 lanes = __ballot_sync(FULL_MASK, multi && ((tx->pmask >> p) & 1));
			if (!lanes) continue;
			*seq += 1;
			if (lane == 0) stm_send(g, p, wid, lanes, REQ_PREPARE, *seq);
			if (!stm_await(g, 1ull << p, wid, *seq, lane, deadline)) {
				*quit = true; // the run failed: locks no longer matter
				return 0;
			}
			if ((lanes >> lane) & 1) {
				const u64 r = ld_relaxed_gpu((const u64*)g->res + tx->tid);
				if (r != STM_RES_PREPARED) {
					multi = false;
					stm_fail(tx, STM_ST_ABORT + (u32)(r & 0xFF), 0);
				}
			}
			if (__ballot_sync(FULL_MASK, multi && ((tx->pmask >> p) & 1))) prepared |= 1ull << p;
		}
		const u32 surv = __ballot_sync(FULL_MASK, multi);
		u64 t0 = 0;
		if (surv && lane == 0) t0 = atomicAdd((unsigned long long*)g->next, (unsigned long long)__popc(surv)) + 1;
		t0 = __shfl_sync(FULL_MASK, t0, 0);
		for (u64 m = prepared; m; m &= m - 1) {
			const u32 p = __ffsll(m) - 1;
			const u32 lanes = __ballot_sync(FULL_MASK, multi && ((tx->pmask >> p) & 1));
			if (lane == 0) stm_send_fin(g, p, wid, lanes, surv, t0);
		}
		const u64 t2 = multi ? t0 + __popc(surv & lanemask_lt(lane)) : 0;
		if (surv) {
			const u64 w0 = clock64();
			stm_install_all(g, tx, t2);
			const u64 t = stm_mark_done(g, t2, 64, lane);
			top = t > top ? t : top;
			cwb += clock64() - w0;
		}
		if (multi) ts = t2;
	}
	u64 c2 = clock64();
	if (upd) cy[1] += c2 - c1 - cwb;
	if (ts) cy[2] += cwb;

	// Publication: the clock passes this warp's batches before the warp
	// starts new transactions.
	if (!stm_publish(g, top, lane, deadline)) {
		*quit = true;
		return 0;
	}
	if (ts) cy[3] += clock64() - c2;
	return ts;
}

// stm_record appends this lane's attempt to the history: kind 0 update
// commit, 1 read-only commit (both to the committed region, sized for
// every ticket of the run, so it cannot fill), 2 aborted attempt (cause in
// bits 8..15) to the aborted region, which stops taking records when full
// (counted in CNT_HIST_DROPPED; hist_ab_end is the end of the records it
// holds). A record: kind, (reads << 32 | writes), the timestamp, the
// snapshot, and the (item, value) pairs of the reads and the writes.
__device__ void stm_record(const stm_globals* g, const stm_tx* tx, u32 kind, u32 cause, u64 ts) {
	const u32 nw = kind == 1 ? 0 : tx->nw;
	const u64 words = 4 + 2 * ((u64)tx->nr + nw);
	u64* h;
	if (kind == 2) {
		const u64 off = atomicAdd((unsigned long long*)g->hist_ab_off, (unsigned long long)words);
		if (off + words > g->hist_ab_cap) {
			atomicAdd((unsigned long long*)&((u64*)g->counters)[CNT_HIST_DROPPED], 1ull);
			return;
		}
		atomicMax((unsigned long long*)g->hist_ab_end, (unsigned long long)(off + words));
		h = (u64*)g->hist_ab + off;
	} else {
		const u64 off = atomicAdd((unsigned long long*)g->hist_off, (unsigned long long)words);
		if (off + words > g->hist_cap) { // the run's ticket bound makes this impossible
			stm_error(g, STM_ERR_HISTORY, g->hist_cap, tx->ticket);
			return;
		}
		h = (u64*)g->hist + off;
	}
	h[0] = kind | (cause << 8);
	h[1] = ((u64)tx->nr << 32) | nw;
	h[2] = ts;
	h[3] = tx->snap;
	h += 4;
	const u64 rbase = (u64)tx->tid * (u32)g->r_cap, wbase = (u64)tx->tid * (u32)g->w_cap;
	for (u32 j = 0; j < tx->nr; j++) {
		h[2 * j] = ((const u32*)g->rs_item)[rbase + j];
		h[2 * j + 1] = ((const u64*)g->rs_val)[rbase + j];
	}
	h += 2 * tx->nr;
	for (u32 j = 0; j < nw; j++) {
		h[2 * j] = ((const u32*)g->ws_item)[wbase + j];
		h[2 * j + 1] = ((const u64*)g->ws_val)[wbase + j];
	}
}

// stm_client: thread mapping: one transaction slot per thread (tid), warps
// commit together. Invariant: a lane holds a ticket until its transaction
// commits or is given up; the warp leaves the loop only when no lane holds
// one and no more tickets are to be had (or the run failed). Tickets stop
// at n_tx, so a run commits at most n_tx transactions.
extern "C" __global__ void __launch_bounds__(STM_CLIENT_BLOCK) stm_client(const stm_globals* __restrict__ gp) {
	__shared__ stm_globals sg;
	stm_copy_globals(&sg, gp);
	const stm_globals* g = &sg;
	const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
	const u32 lane = threadIdx.x & 31;
	const u32 wid = tid >> 5;
	const u64 deadline = globaltimer_ns() + g->limit_ns;
	u64* dctl = stm_dctl(g);
	u64 cnt[CNT_WORDS];
	for (int i = 0; i < CNT_WORDS; i++) cnt[i] = 0;
	u64 cy[4] = {0, 0, 0, 0};
	bool have = false, done = false;
	u64 ticket = 0;
	u32 seq = 0;
	for (;;) {
		u32 flags = 0;
		if (lane == 0) {
			if (stm_errored(g))
				flags = 1;
			else if (globaltimer_ns() > deadline) {
				stm_error(g, STM_ERR_DEADLINE, STM_AT_RUN, 0);
				flags = 1;
			} else if (ld_relaxed_gpu(&dctl[DCTL_STOP]))
				flags = 2;
		}
		flags = __shfl_sync(FULL_MASK, flags, 0);
		if (flags == 1) break;
		if (flags == 2) {
			have = false; // abandon attempts in progress
			done = true;
		}
		const u32 need = __ballot_sync(FULL_MASK, !have && !done);
		if (need) {
			u64 base = 0;
			if (lane == 0) base = atomicAdd((unsigned long long*)&dctl[DCTL_TICKETS], (unsigned long long)__popc(need));
			base = __shfl_sync(FULL_MASK, base, 0);
			if (!have && !done) {
				ticket = base + __popc(need & lanemask_lt(lane));
				if (g->n_tx && ticket >= g->n_tx)
					done = true;
				else
					have = true;
			}
			if (lane == 0 && g->n_tx && base + __popc(need) > g->n_tx) st_relaxed_gpu(&dctl[DCTL_TICKETS_OUT], 1);
		}
		if (!__any_sync(FULL_MASK, have)) break;

		stm_tx tx;
		tx.g = g;
		tx.snap = 0;
		tx.ticket = ticket;
		tx.rng = stm_seed(g->seed, ticket);
		tx.pmask = 0;
		tx.tid = tid;
		tx.thread = tid;
		tx.threads = (u32)g->threads;
		tx.nr = tx.nw = 0;
		tx.ro = 0;
		tx.begun = 0;
		tx.state = STM_ST_OK;
		tx.detail = 0;
		tx.bad = 0;
		tx.calls = 0;
		tx.deadline = deadline;
		if (have) {
			const u64 c0 = clock64();
			stm_body(&tx);
			if (!tx.begun) stm_fail(&tx, STM_ERR_NO_BEGIN, 0);
			cnt[CNT_CY_EXECUTE] += clock64() - c0;
			if (tx.state == STM_ERR_DEADLINE)
				stm_error(g, STM_ERR_DEADLINE, STM_AT_RUN, ticket);
			else if (tx.state >= STM_ERR_ITEM)
				stm_error(g, tx.state, ticket, tx.detail);
		}
		__syncwarp();
		bool quit = false;
		const u64 ts = stm_commit_warp(g, &tx, have, lane, wid, &seq, deadline, cy, &quit);
		if (__any_sync(FULL_MASK, quit)) break;
		if (have) {
			if (tx.state == STM_ST_OK && (ts || tx.ro || tx.nw == 0)) {
				const bool rot = ts == 0;
				cnt[rot ? CNT_READ_ONLY : CNT_COMMITS]++;
				if (tx.bad) cnt[CNT_WRONG]++;
				if (g->hist_mode) stm_record(g, &tx, rot ? 1 : 0, 0, rot ? tx.snap : ts);
				have = false;
			} else if (tx.state == STM_ST_USER) {
				cnt[CNT_USER]++;
				have = false;
			} else if (tx.state == STM_ST_STOP) {
				have = false; // the run stopped during it: abandoned
				done = true;
			} else if (tx.state >= STM_ST_ABORT && tx.state < STM_ST_ABORT + 4) {
				cnt[CNT_ABORT0 + tx.state - STM_ST_ABORT]++;
				if (g->hist_mode == 2) stm_record(g, &tx, 2, tx.state - STM_ST_ABORT, tx.snap);
			} else {
				have = false; // an error, recorded above: the run ends
			}
		}
	}
	cnt[CNT_CY_PREVALIDATE] += cy[0];
	cnt[CNT_CY_ROUNDTRIP] += cy[1];
	cnt[CNT_CY_WRITEBACK] += cy[2];
	cnt[CNT_CY_PUBLISH] += cy[3];
	u64* counters = (u64*)g->counters;
	for (int i = 0; i < CNT_WORDS; i++)
		if (cnt[i]) atomicAdd((unsigned long long*)&counters[i], (unsigned long long)cnt[i]);
	__syncwarp();
	if (lane == 0) {
		__threadfence();
		atomicAdd((unsigned long long*)&dctl[DCTL_CLIENTS_DONE], 1ull);
	}
}

// ---- server side ---------------------------------------------------------

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
              "stm_log_ctl outgrew the size gpu_layout.go reserves for it");

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

// stm_worker serves the requests the receiver leaves in its mail: thread
// mapping: one warp per request, lane l answers client lane l.
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
		__threadfence_block();
		const u32 cw = ctl->mail_warp[me], mask = ctl->mail_mask[me], kind = ctl->mail_kind[me], seq = ctl->mail_seq[me];
		__syncwarp();
		const u64 c0 = clock64();
		// Lane l loads its transaction's snapshot and set sizes.
		const bool in = (mask >> lane) & 1;
		const u32 tid = cw * 32 + lane;
		u64 snap = ~0ull;
		u32 nr = 0, nw = 0;
		if (in) {
			snap = cg64(g->tx_snap, tid);
			nr = cg32(g->tx_nr, tid);
			nw = cg32(g->tx_nw, tid);
		}
		const u64 min_snap = warp_min64(snap);
		const bool fast = __reduce_add_sync(FULL_MASK, nr + nw) <= STM_TABLE / 2 && __reduce_max_sync(FULL_MASK, nw) <= STM_SPL;
		u32 cl = 0; // lane l's writes of this partition (fast path)
		u64 h0 = 0, t0 = 0;
		u32 cause = 0; // lane l: 1 + cause of client lane l's abort
		if (fast) {
			for (u32 i = lane; i < STM_TABLE; i += 32) {
				S->key[i] = STM_EMPTY;
				S->rd[i] = 0;
				S->wr[i] = 0;
			}
			S->snap[lane] = snap;
			if (lane == 0) S->rw = S->ww = S->lf = 0;
			__syncwarp();
			if (in) {
				// The first STM_SPL reads and the writes (at most STM_SPL
				// here) are loaded at once: one round trip to L2.
				const u64 rb = (u64)tid * (u32)g->r_cap, wb = (u64)tid * (u32)g->w_cap;
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
#pragma unroll
				for (u32 j = 0; j < STM_SPL; j++)
					if (j < nw && stm_partition(g, wit[j]) == p) {
						stm_table_put(S, wit[j], 1u << lane, true);
						S->witem[lane * STM_SPL + cl++] = wit[j];
					}
			}
			__syncwarp();
			if (lane == 0) {
				h0 = ctl->head;
				t0 = ctl->tail;
			}
			h0 = __shfl_sync(FULL_MASK, h0, 0);
			t0 = __shfl_sync(FULL_MASK, t0, 0);
			scanned += stm_scan_batch(g, L, S, lane, t0, h0, min_snap);
			batched++;
			// Catch up with what was logged meanwhile, so that the scan
			// under the lock is short.
			u64 hc = 0;
			if (lane == 0) hc = ctl->head;
			hc = __shfl_sync(FULL_MASK, hc, 0);
			if (hc != h0) {
				__syncwarp();
				scanned += stm_scan_batch(g, L, S, lane, h0, hc, min_snap);
				h0 = hc;
			}
			__threadfence_block();
			__syncwarp();
			const u32 fl = __ballot_sync(FULL_MASK, in && ctl->floor_ts > snap);
			const u32 bit = 1u << lane;
			cause = (S->rw & bit) ? 1 + STM_READ_WRITE : (S->ww & bit) ? 1 + STM_WRITE_WRITE
			      : ((S->lf | fl) & bit) ? 1 + STM_LOG_FULL : 0;
		} else {
			if (lane == 0) {
				h0 = ctl->head;
				t0 = ctl->tail;
			}
			h0 = __shfl_sync(FULL_MASK, h0, 0);
			t0 = __shfl_sync(FULL_MASK, t0, 0);
			for (u32 m = mask; m; m &= m - 1) {
				const u32 l = __ffs(m) - 1;
				const u64 s = __shfl_sync(FULL_MASK, snap, l);
				const u32 c = stm_validate(g, L, S->bloom, p, lane, cw * 32 + l, s, t0, h0);
				if (lane == l) cause = c;
			}
		}
		u32 ok = __ballot_sync(FULL_MASK, in && cause == 0);
		const u64 c1 = clock64();
		// The lock: then validate against what was logged meanwhile.
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
			cy_lock += clock64() - l0;
		}
		if (__shfl_sync(FULL_MASK, quit, 0)) break;
		__threadfence_block();
		u64 h1 = 0;
		if (lane == 0) h1 = ctl->head;
		h1 = __shfl_sync(FULL_MASK, h1, 0);
		if (ok && h1 != h0) {
			if (fast) {
				scanned += stm_scan_batch(g, L, S, lane, h0, h1, min_snap);
				__syncwarp();
				const u32 bit = 1u << lane;
				if (!cause && ((S->rw | S->ww | S->lf) & bit))
					cause = (S->rw & bit) ? 1 + STM_READ_WRITE : (S->ww & bit) ? 1 + STM_WRITE_WRITE : 1 + STM_LOG_FULL;
			} else {
				for (u32 m = ok; m; m &= m - 1) {
					const u32 l = __ffs(m) - 1;
					const u64 s = __shfl_sync(FULL_MASK, snap, l);
					const u32 c = stm_validate(g, L, S->bloom, p, lane, cw * 32 + l, s, h0, h1);
					if (lane == l && c) cause = c;
				}
			}
		}
		// Entries evicted meanwhile (the floor only moves under the lock).
		if (in && !cause && ctl->floor_ts > snap) cause = 1 + STM_LOG_FULL;
		ok = __ballot_sync(FULL_MASK, in && cause == 0);
		u64 first = 0;
		if (kind == REQ_SINGLE) {
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
				const u32 items = __reduce_add_sync(FULL_MASK, ((ok >> lane) & 1) ? cl : 0);
				if (fast && (u64)__popc(ok) <= g->log_n && items <= g->log_w) {
					stm_log_insert_batch(g, L, S, lane, ok, cl, first);
					fast_n++;
				} else {
					stm_log_insert(g, L, p, lane, cw, ok, ok, first);
				}
			}
			__threadfence_block();
			if (lane == 0) ctl->lock = 0;
		} else {
			__threadfence_block();
			if (lane == 0) ctl->lock = ok ? (LOCK_PREPARED | cw) : 0;
		}
		if (in) {
			u64 r;
			if (cause)
				r = STM_RES_FLAG | (cause - 1);
			else if (kind == REQ_SINGLE)
				r = first + __popc(ok & lanemask_lt(lane));
			else
				r = STM_RES_PREPARED;
			st_relaxed_gpu((u64*)g->res + cw * 32 + lane, r);
		}
		__threadfence();
		__syncwarp();
		if (lane == 0) {
			st_release_gpu((u32*)g->reply + (u64)cw * g->servers + p, seq);
			ctl->mail[me] = 0;
		}
		cy_validate += (c1 - c0) * __popc(mask);
		cy_insert += (clock64() - c1) * __popc(mask);
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
			u32 ready = 0, cw = 0, mask = 0, all = 0;
			u64 t0 = 0;
			if (lane == 0 && ld_relaxed_gpu(&f->seq) == fh + 1 && ld_acquire_gpu(&f->seq) == fh + 1) {
				ready = 1;
				cw = f->warp;
				mask = f->mask;
				all = f->all;
				t0 = f->t0;
			}
			if (!__shfl_sync(FULL_MASK, ready, 0)) break;
			cw = __shfl_sync(FULL_MASK, cw, 0);
			mask = __shfl_sync(FULL_MASK, mask, 0);
			all = __shfl_sync(FULL_MASK, all, 0);
			t0 = __shfl_sync(FULL_MASK, t0, 0);
			stm_log_insert(g, L, p, lane, cw, mask, all, t0);
			__threadfence_block();
			if (lane == 0) ctl->lock = 0;
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

// ---- setup and results ---------------------------------------------------

// stm_init: one thread per item: version 0 holds init[i], the other slots
// none.
extern "C" __global__ void stm_init(const stm_globals* __restrict__ g, const u64* __restrict__ init) {
	const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= g->n_items) return;
	u64* vals = (u64*)g->vals + i * (u32)g->k;
	u64* vers = (u64*)g->vers + i * (u32)g->k;
	vals[0] = init[i];
	vers[0] = 0;
	for (u32 j = 1; j < (u32)g->k; j++) {
		vals[j] = 0;
		vers[j] = STM_NO_VERSION;
	}
	((u32*)g->head)[i] = 0;
}

// stm_final: one thread per item: out[i] = the item's newest version (run
// after the kernels have finished).
extern "C" __global__ void stm_final(const stm_globals* __restrict__ g, u64* __restrict__ out) {
	const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= g->n_items) return;
	out[i] = ((const u64*)g->vals)[i * (u32)g->k + ((const u32*)g->head)[i]];
}
