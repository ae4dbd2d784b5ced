// stm/log.cuh: a CSMV server's log of recent commits in shared memory: its
// layout, the workers' scratch, and how entries are added (included by
// server.cu, whose workers and receiver use it).
//
// Entries are added in turns, without a lock. A request's tentative
// survivors reserve consecutive slots with one atomicAdd on ctl->rsv
// (stm_reserve); the request then waits for its turn (stm_turn: ctl->head
// equal to its first slot). The turn's holder drops what its entries
// displace (stm_log_evict), takes consecutive timestamps (stm_take_ts: in
// shared memory with one server, one atomicAdd on the global counter with
// several), writes its entries and advances head past them, which
// publishes them and passes the turn on. Invariant: entries [tail, head)
// are complete and in timestamp order (the turns follow the slots, and each
// takes its timestamps in its turn), so validation reads only them. A slot
// whose transaction did not commit holds a null entry (STM_NULL_TS, no
// items) or, for a single-partition transaction that failed its final
// validation after its turn, its entry as written (a phantom: later
// transactions may abort for it, never commit wrongly).

#include "stm/device.cuh"

// The timestamp of a null entry: no transaction; it never conflicts, never
// stops a scan and never raises the floor.
#define STM_NULL_TS 0xFFFFFFFFFFFFFFFFull

// A worker's scratch for batch validation: the request's items in an
// open-addressing table (key: item, STM_EMPTY when free; rd and wr: the
// lanes that read and wrote it), the lanes' snapshots, their writes of
// this partition (STM_SPL per lane, in order: a single-partition request
// whose transactions write at most that many) and the conflicts found.
struct stm_scratch {
	u32 key[STM_TABLE];
	u32 rd[STM_TABLE];
	u32 wr[STM_TABLE];
	u32 witem[32 * STM_SPL];
	u64 snap[32];
	u32 rw, ww, lf, pad;
};

// A worker's offer to have its request logged in an earlier request's
// turn (a group, stm_commit_group): a single-partition request whose
// tentative survivors' writes are staged in the worker's scratch. slot is
// the request's first slot, stored last (after a block fence, with first
// reset to ~0): a turn's holder that reads slot == the slot after its
// group's end may read the rest and take the request into its group. The
// holder then stores pos (the request's first pool position) and, after a
// block fence, first (its first timestamp), which tells the offering
// worker to write its own entries there (stm_group_write).
struct stm_offer {
	volatile u64 slot;          // the request's first slot (~0: none yet)
	volatile u64 first;         // its first timestamp, once a group took it (~0: not yet)
	volatile u64 pos;           // its first pool position, stored before first
	volatile u64 need;          // the first entry its survivors have yet to scan (~0: none)
	volatile u32 slots, items;  // its survivors (client lanes) and their staged writes
	volatile u8 cl[32];         // each client lane's staged writes (0 outside slots)
};

// The shared memory of a server block: the log (entry timestamps, pool
// positions and item counts, then the item pool; the sizes are the run's),
// its control words, the workers' offers and scratch.
struct stm_log_ctl {
	volatile u64 head, tail;  // entries [tail, head) are present and complete; head is also the turn
	volatile u64 rsv;         // slots reserved: [head, rsv) are being written or wait for their turn
	volatile u64 pool_head;   // next absolute pool position
	volatile u64 floor_ts;    // newest timestamp that left the log
	volatile u64 next_ts;     // the timestamp counter when there is one server
	volatile u32 prep_slots;  // the prepared request holding the turn: its lanes that hold slots
	volatile u32 prep_cw;     // and its client warp
	volatile u32 exit;        // the receiver says: leave
	volatile u32 grp_left;    // the group holding the turn: its members that have yet to write their entries
	volatile u64 grp_end;     // and the slot after it (head once published),
	volatile u64 grp_pool;    // the pool position after its items,
	volatile u64 grp_c0;      // and the clock when its turn was taken (cy_hold)
	u64 claim;                // the next slot of the request ring a worker takes (stm_take)
	stm_offer offer[STM_WORKERS];
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

// Every item's newest logged write, for the workers' first validation
// (server.cu, stm_validate_table): whoever writes a live entry raises each
// of its items' wts to the entry's timestamp (stm_wts_note, device.cuh, before the
// block fence that precedes the entry's publication), so a worker that
// reads head = h and then fences reads, for every item, a wts at least as
// new as every entry before slot h that wrote it (and perhaps newer: an
// entry being written, of a slot it will follow). An item is written only
// by its partition's server block, so every party is in one block.

// stm_reserve reserves m consecutive slots of the log (lane 0's one
// atomicAdd) and returns the first, in every lane.
__device__ __forceinline__ u64 stm_reserve(stm_log_ctl* ctl, u32 lane, u32 m) {
	u64 s = 0;
	if (lane == 0) s = atomicAdd((unsigned long long*)&ctl->rsv, (unsigned long long)m);
	return __shfl_sync(FULL_MASK, s, 0);
}

// STM_GROUPED is what stm_turn returns when an earlier turn's group took
// the caller's offered request (stm_commit_group).
#define STM_GROUPED (~1ull)

// stm_turn waits until the log's head reaches slot s (lane 0 polls,
// backing off) and returns it, in every lane: s when the caller holds the
// turn (every earlier slot is complete). With an offer o (the caller's,
// stm_offer; nullptr when it did not offer) it also returns, with
// STM_GROUPED, when an earlier turn's holder took the request into its
// group (o->first set): head stays below s until the request's entries are
// written, by the caller (stm_group_write). ~0: the run failed meanwhile.
// *cy counts the cycles waited.
__device__ __forceinline__ u64 stm_turn(const stm_globals* g, stm_log_ctl* ctl, const stm_offer* o, u32 lane, u64 s, u64 deadline, u64* cy) {
	u64 h = 0;
	if (lane == 0) {
		u32 w = 0;
		const u64 l0 = clock64();
		while ((h = ctl->head) < s) {
			if (o && o->first != ~0ull) {
				h = STM_GROUPED;
				break;
			}
			if (stm_wait_check(g, deadline, &w, STM_AT_LOCK)) {
				h = ~0ull;
				break;
			}
			__nanosleep(20);
		}
		*cy += clock64() - l0;
	}
	h = __shfl_sync(FULL_MASK, h, 0);
	__threadfence_block();
	return h;
}

// stm_take_ts0 takes n consecutive timestamps for the turn's holder and
// returns the first in lane 0 (0 in the others): from the server's own
// counter when there is one server, else one atomicAdd on the global
// counter (in turn order, so this log's entries keep timestamp order). A
// caller that uses the result later overlaps the atomic's round trip with
// its work meanwhile.
__device__ __forceinline__ u64 stm_take_ts0(const stm_globals* g, stm_log_ctl* ctl, u32 lane, u32 n) {
	u64 first = 0;
	if (lane == 0) {
		if (g->servers == 1) {
			first = ctl->next_ts + 1;
			ctl->next_ts = first + n - 1;
		} else {
			first = atomicAdd((unsigned long long*)g->next, (unsigned long long)n) + 1;
		}
	}
	return first;
}

// stm_take_ts is stm_take_ts0 with the first timestamp in every lane.
__device__ __forceinline__ u64 stm_take_ts(const stm_globals* g, stm_log_ctl* ctl, u32 lane, u32 n) {
	return __shfl_sync(FULL_MASK, stm_take_ts0(g, ctl, lane, n), 0);
}

// stm_log_evict makes room, for the turn's holder, for m entries at slot
// head whose items take the pool up to next_pool: it drops entries from the
// tail while the log would hold more than log_n entries or their items
// start log_w or more before next_pool (both hold for a prefix of the log:
// slots and pool positions grow together), raises the floor to the newest
// timestamp dropped, and stores the tail and floor before any slot or pool
// position is overwritten, so a reader that read an overwritten entry sees
// them moved after a fence. Thread mapping: lane i tests entry tail+i, 32
// at a time. All lanes call it.
__device__ void stm_log_evict(const stm_globals* g, stm_log& L, u32 lane, u64 head, u32 m, u64 next_pool) {
	const u64 emask = g->log_e - 1;
	u64 tail = L.ctl->tail, fl = 0;
	for (;;) {
		const u64 a = tail + lane;
		bool ev = false;
		u64 ts = STM_NULL_TS;
		if (a < head) {
			const u64 e = a & emask;
			ev = head + m - a > g->log_n || L.pos[e] + g->log_w < next_pool;
			ts = L.ts[e];
		}
		const u32 b = __ballot_sync(FULL_MASK, ev);
		const u32 k = b == FULL_MASK ? 32 : __ffs(~b) - 1;
		if (lane < k && ts != STM_NULL_TS && ts > fl) fl = ts;
		tail += k;
		if (k < 32) break;
	}
	fl = warp_max64(fl);
	__syncwarp();
	if (lane == 0) {
		if (fl > L.ctl->floor_ts) L.ctl->floor_ts = fl;
		L.ctl->tail = tail;
	}
	__threadfence_block();
	__syncwarp();
}

// stm_log_insert writes, in the caller's turn, one entry per lane of slots
// (of client warp cw), in lane order, from head on: a lane of lanes gets
// timestamp t0 + its rank in all and its items of partition p, read from
// its write set (no items listed, STM_WILDCARD, when more than log_w); any
// other lane a null entry. Each entry is published by advancing head after
// it is written, so the turn passes on with the last. Thread mapping: the
// warp writes one entry at a time, lane j taking the write set's items j,
// j+32, ... All lanes call it.
__device__ void stm_log_insert(const stm_globals* g, stm_log& L, u32 p, u32 lane, u32 cw, u32 slots, u32 lanes, u32 all, u64 t0) {
	const u64 emask = g->log_e - 1, amask = g->log_a - 1;
	for (u32 m = slots; m; m &= m - 1) {
		const u32 l = __ffs(m) - 1;
		const bool live = (lanes >> l) & 1;
		const u32 tid = cw * 32 + l;
		const u32 nw = live ? cg32(g->tx_nw, tid) : 0;
		const u64 wb = (u64)tid * (u32)g->w_cap;
		u32 c = 0;
		for (u32 j = lane; j < nw; j += 32) c += stm_partition(g, cg32(g->ws_item, wb + j)) == p;
		c = __reduce_add_sync(FULL_MASK, c);
		const bool wild = c > g->log_w;
		const u64 head = L.ctl->head, base = L.ctl->pool_head;
		const u64 next_pool = base + (wild ? 0 : c);
		stm_log_evict(g, L, lane, head, 1, next_pool);
		if (wild && live) {
			const u64 ts = t0 + __popc(all & lanemask_lt(l));
			for (u32 j = lane; j < nw; j += 32) {
				const u32 it = cg32(g->ws_item, wb + j);
				if (stm_partition(g, it) == p) stm_wts_note(g, it, ts);
			}
		}
		if (!wild) {
			u32 off = 0;
			for (u32 j0 = 0; j0 < nw; j0 += 32) {
				const u32 j = j0 + lane;
				const u32 it = j < nw ? cg32(g->ws_item, wb + j) : 0;
				const bool in = j < nw && stm_partition(g, it) == p;
				const u32 b = __ballot_sync(FULL_MASK, in);
				if (in) L.pool[(base + off + __popc(b & lanemask_lt(lane))) & amask] = it;
				if (in && live) stm_wts_note(g, it, t0 + __popc(all & lanemask_lt(l)));
				off += __popc(b);
			}
		}
		__syncwarp();
		if (lane == 0) {
			const u64 e = head & emask;
			L.ts[e] = live ? t0 + __popc(all & lanemask_lt(l)) : STM_NULL_TS;
			L.pos[e] = base;
			L.cnt[e] = wild ? STM_WILDCARD : (int)c;
			L.ctl->pool_head = next_pool;
			__threadfence_block();
			L.ctl->head = head + 1;
		}
		__syncwarp();
	}
}

// stm_owner returns, in every lane, the lane whose range [start, start +
// its count) holds x, given each lane's start (an exclusive prefix sum of
// the counts, so nondecreasing in lane order): the last lane whose start
// is at most x (five shuffles). All lanes call it, each with its own x.
__device__ __forceinline__ u32 stm_owner(u32 start, u32 x) {
	u32 o = 0;
#pragma unroll
	for (u32 s = 16; s; s >>= 1)
		if (__shfl_sync(FULL_MASK, start, o + s) <= x) o += s;
	return o;
}

// stm_log_put_entry writes client lane's entry of a request whose
// entries start at slot head: slot head + the lane's rank r in slots,
// timestamp t0 + r (STM_NULL_TS unless live), its c items at pool
// position pos. The lane calls it when it is in slots.
__device__ __forceinline__ void stm_log_put_entry(const stm_globals* g, stm_log& L, u32 lane, u32 slots, bool live, u64 head, u64 pos, u32 c,
                                                  u64 t0) {
	const u32 r = __popc(slots & lanemask_lt(lane));
	const u64 e = (head + r) & (g->log_e - 1);
	L.ts[e] = live ? t0 + r : STM_NULL_TS;
	L.pos[e] = pos;
	L.cnt[e] = (int)c;
}

// stm_log_write_staged writes the entries of a request whose survivors'
// writes are staged in scratch S (lane l: cl of them at S->witem[l *
// STM_SPL]): client lane l of slots gets entry head + its rank r in slots,
// timestamp t0 + r (STM_NULL_TS unless live) and its items at pool
// position base + the items of the lanes before it. It publishes nothing
// (the caller moves head) and returns the request's items, in every lane.
// Thread mapping: lane l writes client lane l's entry. All lanes call it.
__device__ __forceinline__ u32 stm_log_write_staged(const stm_globals* g, stm_log& L, const stm_scratch* S, u32 lane, u32 slots, bool live, u32 cl,
                                                    u64 head, u64 base, u64 t0) {
	const u64 amask = g->log_a - 1;
	const bool mine = (slots >> lane) & 1;
	const u32 c = mine && live ? cl : 0;
	const u32 incl = warp_incl_sum32(c, lane); // inclusive prefix sum of the entries' items
	const u32 start = incl - c;
	const u64 ts = t0 + __popc(slots & lanemask_lt(lane));
	for (u32 i = 0; i < c; i++) {
		const u32 it = S->witem[lane * STM_SPL + i];
		L.pool[(base + start + i) & amask] = it;
		stm_wts_note(g, it, ts);
	}
	if (mine) stm_log_put_entry(g, L, lane, slots, live, head, base + start, c, t0);
	return __shfl_sync(FULL_MASK, incl, 31);
}

// stm_log_publish moves, in the caller's turn, the pool's head to
// next_pool and the log's head to head (after a block fence: the entries
// before it are complete), which passes the turn on. All lanes call it.
__device__ __forceinline__ void stm_log_publish(stm_log& L, u32 lane, u64 head, u64 next_pool) {
	__threadfence_block();
	__syncwarp();
	if (lane == 0) {
		L.ctl->pool_head = next_pool;
		__threadfence_block();
		L.ctl->head = head;
	}
	__syncwarp();
}

// stm_group_done tells the group holding the turn (stm_commit_group) that
// the caller's entries are written: lane 0 decrements ctl->grp_left after
// a block fence; the member that brings it to zero publishes the group
// (pool head, then head to ctl->grp_end, stm_log_publish), which passes
// the turn on, and adds the turn's cycles to *cy_hold. All lanes call it.
__device__ __forceinline__ void stm_group_done(stm_log& L, u32 lane, u64* cy_hold) {
	__threadfence_block();
	__syncwarp();
	u32 last = 0;
	u64 end = 0, pool = 0;
	if (lane == 0 && atomicSub((unsigned int*)&L.ctl->grp_left, 1u) == 1u) {
		last = 1;
		__threadfence_block();
		end = L.ctl->grp_end;
		pool = L.ctl->grp_pool;
		*cy_hold += clock64() - L.ctl->grp_c0;
	}
	if (!__shfl_sync(FULL_MASK, last, 0)) return;
	stm_log_publish(L, lane, __shfl_sync(FULL_MASK, end, 0), __shfl_sync(FULL_MASK, pool, 0));
}

// stm_log_insert_batch writes, in the caller's turn, the entries of the
// lanes of slots of a batch-validated single-partition request of client
// warp cw at once: lane l's entry is slot head + its rank r in slots; a
// lane of lanes gets timestamp t0 + r and its cl writes (all of this
// partition), any other a null entry; then head moves past them all. The
// items come from the worker's scratch when staged (S->witem), else from
// the write sets in global memory, copied by the whole warp: lane k copies
// the request's items k, k + 32, ... (its entry by stm_owner), four loads
// in flight at a time. The caller has checked that the entries and their
// items fit the log (popc(slots) <= log_n, sum cl <= log_w). Thread
// mapping: lane l writes client lane l's entry. All lanes call it.
__device__ void stm_log_insert_batch(const stm_globals* g, stm_log& L, stm_scratch* S, u32 lane, u32 cw, u32 slots, u32 lanes, u32 cl,
                                     bool staged, u64 t0) {
	const u64 amask = g->log_a - 1;
	const bool mine = (slots >> lane) & 1, live = (lanes >> lane) & 1;
	const u32 m = __popc(slots), c = mine && live ? cl : 0;
	const u64 head = L.ctl->head, base = L.ctl->pool_head;
	if (staged) {
		const u32 total = __reduce_add_sync(FULL_MASK, c);
		stm_log_evict(g, L, lane, head, m, base + total);
		stm_log_write_staged(g, L, S, lane, slots, live, cl, head, base, t0);
		stm_log_publish(L, lane, head + m, base + total);
		return;
	}
	const u32 incl = warp_incl_sum32(c, lane); // inclusive prefix sum of the entries' items
	const u32 total = __shfl_sync(FULL_MASK, incl, 31), start = incl - c;
	stm_log_evict(g, L, lane, head, m, base + total);
	constexpr u32 per = 4;
	for (u32 x0 = 0; x0 < total; x0 += 32 * per) {
		u32 v[per];
		bool ok[per];
#pragma unroll
		for (u32 k = 0; k < per; k++) {
			const u32 x = x0 + k * 32 + lane;
			const u32 o = stm_owner(start, x);
			const u32 so = __shfl_sync(FULL_MASK, start, o); // every lane shuffles: not under ok
			ok[k] = x < total;
			v[k] = ok[k] ? cg32(g->ws_item, ((u64)cw * 32 + o) * (u32)g->w_cap + (x - so)) : 0;
		}
#pragma unroll
		for (u32 k = 0; k < per; k++) {
			const u32 o = stm_owner(start, x0 + k * 32 + lane); // every lane shuffles: not under ok
			if (ok[k]) {
				L.pool[(base + x0 + k * 32 + lane) & amask] = v[k];
				stm_wts_note(g, v[k], t0 + __popc(slots & lanemask_lt(o)));
			}
		}
	}
	if (mine) stm_log_put_entry(g, L, lane, slots, live, head, base + start, c, t0);
	stm_log_publish(L, lane, head + m, base + total);
}
