// stm/commit.cu: CSMV's client commit path: a warp's pre-validation
// (Algorithm 1), contention management and claims, the requests to the
// servers and the wait for their answers, and stm_commit_warp, which runs
// them for a warp's batch and writes back and publishes what committed
// (with direct commits through direct.cu, included before it).
// Included by client.cu after the write-back and publication helpers it
// calls (stm_install_all, stm_mark_done, stm_publish); device.cuh holds the
// shared device code and describes the protocol.

// stm_pv_slot is item's home slot in a warp's pre-validation table
// (STM_PV_SLOTS slots, a power of two; Fibonacci hashing: the top bits of
// the item times 2^32/phi).
__device__ __forceinline__ u32 stm_pv_slot(u32 item) {
	return (u32)(((u64)(item * 0x9E3779B1u) * STM_PV_SLOTS) >> 32);
}

// stm_pv_writers returns the lanes (a mask) that wrote item, from the
// warp's table (keys, writers): linear probing from its home slot to its
// entry, or to an empty slot (none wrote it). The table is at most half
// full, so an empty slot ends every probe.
__device__ __forceinline__ u32 stm_pv_writers(const volatile u32* keys, const volatile u32* writers, u32 item) {
	const u32 key = item + 1;
	for (u32 s = stm_pv_slot(item);; s = (s + 1) & (STM_PV_SLOTS - 1)) {
		const u32 e = keys[s];
		if (e == key) return writers[s];
		if (e == 0u) return 0u;
	}
}

// stm_pv_table finds, for each update lane of the warp, the lower lanes
// whose write sets meet its read set (*crw) and its write set (*cww),
// through a table of the warp's write items in shared memory: two words a
// slot, the key (item + 1, 0 empty) and the writers' lane mask;
// STM_PV_SLOTS slots a warp (a Go-owned constant, sized to the client
// block). Thread mapping: every lane clears STM_PV_SLOTS/32 slots; each
// update lane inserts its write items (a 32-bit compare-and-swap of the
// key per probe, then a 32-bit atomic OR of its bit into the slot's
// writers), then looks up each item it read and wrote. Invariant: the
// warp's write items, duplicates counted, fill at most half the slots
// (the caller checks: warp-uniform), so inserts and lookups end. Cost:
// O(reads + writes) per lane, against O(32 x writes x (reads + writes))
// comparisons for the scan (stm_pv_scan), whose 32 steps of shuffles
// measured about 5-10 µs per warp round with one warp per SM (H200,
// BENCHMARKS.md: pre-validation 57% of an update commit's time under Zipf
// 0.99). All lanes call it.
__device__ __forceinline__ void stm_pv_table(const stm_set_row ri, const stm_set_row wi, const stm_tx* tx, bool upd, u32 lane, u32* crw, u32* cww) {
	__shared__ u32 tkeys[STM_CLIENT_BLOCK / 32][STM_PV_SLOTS];
	__shared__ u32 twriters[STM_CLIENT_BLOCK / 32][STM_PV_SLOTS];
	u32* keys = tkeys[threadIdx.x >> 5];
	u32* writers = twriters[threadIdx.x >> 5];
#pragma unroll
	for (u32 s = 0; s < STM_PV_SLOTS; s += 32) {
		keys[s + lane] = 0;
		writers[s + lane] = 0;
	}
	__syncwarp();
	if (upd) {
		const u32 bit = 1u << lane;
		for (u32 j = 0; j < tx->nw; j++) {
			const u32 key = wi[j] + 1;
			for (u32 s = stm_pv_slot(wi[j]);; s = (s + 1) & (STM_PV_SLOTS - 1)) {
				const u32 old = atomicCAS(keys + s, 0u, key);
				if (old == 0u || old == key) {
					atomicOr(writers + s, bit);
					break;
				}
			}
		}
	}
	__syncwarp();
	u32 r = 0, w = 0;
	if (upd) {
		const u32 lower = lanemask_lt(lane);
		for (u32 q = 0; q < tx->nr; q++) r |= stm_pv_writers(keys, writers, ri[q]);
		for (u32 j = 0; j < tx->nw; j++) w |= stm_pv_writers(keys, writers, wi[j]);
		r &= lower;
		w &= lower;
	}
	__syncwarp(); // every lookup before the next call clears the table
	*crw = r;
	*cww = w;
}

// stm_pv_scan is stm_pv_table for warps whose write items would fill more
// than half of the table: a step per update lane l, its write-set
// signature (passed by a shuffle) filtering the exact checks, which load
// lane l's write items (stm_set_row: the first from the set mirror with
// direct commits, the rest from its row) and compare each with this
// lane's read and write sets. *crw gets the lanes l one of whose write
// items this lane read, *cww those one of whose write items it wrote.
// All lanes call it.
__device__ void stm_pv_scan(const stm_globals* g, const stm_set_row ri, const stm_set_row wi, const stm_tx* tx, bool upd, u32 lane, u32 wbase,
			    u32* crw, u32* cww) {
	u64 wsig = 0, rsig = 0;
	if (upd) {
		for (u32 j = 0; j < tx->nw; j++) wsig |= 1ull << stm_hash6(wi[j]);
		for (u32 j = 0; j < tx->nr; j++) rsig |= 1ull << stm_hash6(ri[j]);
	}
	const u32 updmask = __ballot_sync(FULL_MASK, upd);
	u32 r = 0, w = 0;
	for (u32 l = 0; l < 32; l++) {
		if (!((updmask >> l) & 1)) continue; // warp-uniform
		const u64 sig = __shfl_sync(FULL_MASK, wsig, l);
		const u32 nwl = __shfl_sync(FULL_MASK, tx->nw, l);
		if (!(upd && l < lane && (sig & (rsig | wsig)))) continue;
		const stm_set_row wl = stm_ws_items(g, wbase + l);
		for (u32 j = 0; j < nwl; j++) {
			const u32 it = wl[j];
			bool hit = false;
			for (u32 q = 0; q < tx->nr && !hit; q++) hit = ri[q] == it;
			if (hit) {
				r |= 1u << l;
				break;
			}
			for (u32 q = 0; q < tx->nw && !hit; q++) hit = wi[q] == it;
			if (hit) w |= 1u << l;
		}
	}
	*crw = r;
	*cww = w;
}

// stm_prevalidate is Algorithm 1: a lane's update transaction conflicts
// with a lower lane's if that one wrote an item it read (read-write) or
// wrote (write-write); lanes decide in lane order, a transaction aborts if
// a conflicting lower lane commits (cause read-write if the lowest such
// lane committed when it is decided wrote an item it read, else
// write-write). The conflicts come from the warp's
// table of write items in shared memory (stm_pv_table) when the warp's
// write items fill at most half of it (warp-uniform), else from the scan
// (stm_pv_scan). The decision goes by ballots: in each step every
// undecided lane aborts if a conflicting lower lane has committed, and
// commits once every conflicting lower lane is decided and none of them
// committed. The lowest undecided lane is decided in every step, so the
// steps are the longest chain of conflicts in the warp, where a loop over
// the lanes met (a shuffle each, in lane order, until 2026-12-01) took one
// per lane that some lane conflicts with: the in-warp check fell from
// 4.46 us to 2.67 us a round with 2-round transfers under Zipf 0.99, and
// from 1.79 us to 1.41 us with 1-round ones (H200, 64K accounts). All
// lanes call it.
__device__ void stm_prevalidate(const stm_globals* g, stm_tx* tx, bool* upd, u32 lane, u32 wbase) {
	const stm_set_row ri = stm_rs_items(g, tx->tid), wi = stm_ws_items(g, tx->tid);
	u32 crw, cww;
	if (warp_sum32(*upd ? tx->nw : 0) <= STM_PV_SLOTS / 2)
		stm_pv_table(ri, wi, tx, *upd, lane, &crw, &cww);
	else
		stm_pv_scan(g, ri, wi, tx, *upd, lane, wbase, &crw, &cww);
	// 0 not an update, 1 commit, 2 undecided, 3 abort
	const u32 conf = crw | cww;
	u32 st = !*upd ? 0 : (conf ? 2 : 1);
	u32 cause = 0; // from the lowest conflicting lane committed when this one is decided
	for (;;) {
		const u32 committed = __ballot_sync(FULL_MASK, st == 1), pending = __ballot_sync(FULL_MASK, st == 2);
		if (!pending) break;
		if (st == 2) {
			const u32 hit = conf & committed;
			if (hit) {
				cause = ((crw >> (__ffs(hit) - 1)) & 1) ? STM_READ_WRITE : STM_WRITE_WRITE;
				st = 3;
			} else if (!(conf & pending))
				st = 1;
		}
	}
	if (*upd && st == 3) {
		stm_fail(tx, STM_ST_ABORT + cause, STM_AB_IN_WARP);
		*upd = false;
	}
}

// STM_CLAIM_TRIES is the attempts in a row a transaction is held back by
// claims before it goes to its servers without claiming (progress never
// depends on claims).
#define STM_CLAIM_TRIES 64

// stm_unclaim releases claim slots of client thread tid, the first n of
// its row: a slot is released only if it still names the thread (tid +
// 1): a slot listed twice, or taken by another since, is left alone.
// remote false: the client lane itself releases the slots it holds (n =
// held, listed in its row of g->claimed, read as it wrote them). remote
// true: a server's worker (serve.cu, stm_post_install) releases, for a
// request it answers now, the slots of the first n items of the thread's
// write set (item & claim_mask, read through L2), as the client would
// after the reply: the transactions held back by them may go on a round
// trip earlier, and the client's own release later finds its slots free
// or another's (claims are a hint only, never needed for correctness).
// The lane calls it alone. stm_unclaim_kept releases tx's (tx->held) and
// sets tx->held to 0.
template <bool remote>
__device__ void stm_unclaim(const stm_globals* g, u32 tid, u32 n) {
	u32* claims = (u32*)g->claims;
	const u64 row = (u64)tid * (u32)g->w_cap;
	for (u32 q = 0; q < n; q++) {
		const u32 c = remote ? __ldcg((const unsigned int*)g->ws_item + row + q) & (u32)g->claim_mask
		                     : ((const u32*)g->claimed)[row + q];
		if (ld_relaxed_gpu(claims + c) == tid + 1) st_relaxed_gpu(claims + c, 0u);
	}
}
__device__ __forceinline__ void stm_unclaim_kept(const stm_globals* g, stm_tx* tx) {
	stm_unclaim<false>(g, tx->tid, tx->held);
	tx->held = 0;
}

// STM_NEWEST_REG is the largest read and write sets whose newest writes
// stm_newest_writes loads all at once.
#define STM_NEWEST_REG 4

// stm_newest_writes reads the newest logged write (wts) of every item tx
// read and wrote and returns the newest of them; *rw says whether one of
// an item read, *ww one of an item written only, is newer than tx's
// snapshot (a conflict every server's first validation would find: wts
// only grows). One relaxed load per access (sets of up to STM_NEWEST_REG
// items: per item, all in flight together). stm_contend keeps its own
// copy of these loops: calling this from it changed stm_client's code
// (sm_90, NVRTC 11.8: 94 registers and a 304-byte frame instead of 80 and
// 352) in programs without the in-place retries.
__device__ __forceinline__ u64 stm_newest_writes(const stm_globals* g, const stm_tx* tx, bool* rw, bool* ww) {
	const stm_set_row ri = stm_rs_items(g, tx->tid), wi = stm_ws_items(g, tx->tid);
	bool r = false, w = false;
	u64 top = 0;
	if (tx->nr <= STM_NEWEST_REG && tx->nw <= STM_NEWEST_REG) {
		// Small sets: every load in flight at once (the loops below wait
		// for each, or each pair, in turn), none for an item written that
		// was also read (its wts is the read's: a read-write conflict).
		u32 rr[STM_NEWEST_REG], wr[STM_NEWEST_REG];
		u64 xr[STM_NEWEST_REG], xw[STM_NEWEST_REG];
		bool dup[STM_NEWEST_REG];
#pragma unroll
		for (u32 q = 0; q < STM_NEWEST_REG; q++) {
			rr[q] = q < tx->nr ? ri[q] : 0u;
			wr[q] = q < tx->nw ? wi[q] : 0u;
		}
#pragma unroll
		for (u32 j = 0; j < STM_NEWEST_REG; j++) {
			dup[j] = false;
#pragma unroll
			for (u32 q = 0; q < STM_NEWEST_REG; q++) dup[j] |= q < tx->nr && rr[q] == wr[j];
		}
#pragma unroll
		for (u32 q = 0; q < STM_NEWEST_REG; q++) xr[q] = q < tx->nr ? stm_wts_read(g, rr[q]) : 0;
#pragma unroll
		for (u32 j = 0; j < STM_NEWEST_REG; j++) xw[j] = j < tx->nw && !dup[j] ? stm_wts_read(g, wr[j]) : 0;
#pragma unroll
		for (u32 q = 0; q < STM_NEWEST_REG; q++) {
			r |= xr[q] > tx->snap;
			w |= xw[q] > tx->snap;
			top = max(top, max(xr[q], xw[q]));
		}
		*rw = r;
		*ww = w;
		return top;
	}
	for (u32 q = 0; q < tx->nr; q++) {
		const u64 x = stm_wts_read(g, ri[q]);
		r |= x > tx->snap;
		top = max(top, x);
	}
	for (u32 q = 0; q < tx->nw; q++) {
		const u64 x = stm_wts_read(g, wi[q]);
		w |= x > tx->snap;
		top = max(top, x);
	}
	*rw = r;
	*ww = w;
	return top;
}

// stm_claim_release releases the words of the first n (at most
// STM_CLAIM_BATCH) of write items wi (item & mask) that stm_claim's lane
// holds: with swapped, those whose swap saw 0 (taken) or the lane (me);
// else (words only loaded) those that read as the lane. Each word once: a
// word listed twice (two items under one word, claimWords' cap) stored
// twice could free another lane's lock taken between the two stores. It
// is released at its first listing that this lane holds (a later one may
// be the lane's: the word's holder at the first listing can have released
// it before the second swap; loaded words the lane holds read the same at
// every listing). The lane calls it alone.
template <bool swapped>
__device__ __forceinline__ void stm_claim_release(u32* claims, const stm_set_row wi, u32 mask, u32 n, const u32* old, u32 me) {
#pragma unroll
	for (u32 q = 0; q < STM_CLAIM_BATCH; q++) {
		if (q >= n) break;
		const u32 c = wi[q] & mask;
		bool dup = false;
#pragma unroll
		for (u32 v = 0; v < q; v++) dup |= (wi[v] & mask) == c && (!swapped || old[v] == 0u || old[v] == me);
		if (!dup && ((swapped && old[q] == 0u) || old[q] == me)) st_relaxed_gpu(claims + c, 0u);
	}
}

// stm_claim claims the words of tx's write items in the claim table
// (item & claim_mask; 0 free, else the holder's tid + 1), in write-set
// order, by compare-and-swap; a word it kept from an earlier attempt
// (tx->held, listed in its row of g->claimed) it already holds. A word
// another lane holds ends it: every claim the lane has, new or kept, is
// released (so that no two lanes wait on each other's words) and it
// returns false. Once it holds them all, the kept words its write set no
// longer uses are released, its row lists the new ones and tx->held their
// number. Cost: for write sets of up to STM_CLAIM_BATCH items, one load
// per word, in flight together, then (when every word is free or the
// lane's) one compare-and-swap per word, in flight together: two round
// trips to L2 (one where the loop waits for each would take one per
// word: the words a commit holds are held the shorter). The loads first
// (test before test-and-set): a claim that would fail takes no word, where
// its swaps would hold the free words among its items for a round trip
// before releasing them, and a hot word met by many failing claims
// (lanes held back, lost lanes' chained claims) was then held by them
// much of the time. With the loads the commits a second rose 1.04x-1.06x
// under Zipf 0.99 at 1 round and 1.81x-1.99x with 2-round transfers (H200,
// 64K accounts, 0/10/50% read-only, 2026-12-01); loading only for lanes
// held back the round before gained 0.99x-1.06x. Larger write sets swap
// word after word. The lane calls it alone.
__device__ bool stm_claim(const stm_globals* g, stm_tx* tx) {
	const stm_set_row wi = stm_ws_items(g, tx->tid);
	u32* claims = (u32*)g->claims;
	u32* mine = (u32*)g->claimed + (u64)tx->tid * (u32)g->w_cap;
	const u32 me = tx->tid + 1, mask = (u32)g->claim_mask;
	if (tx->nw <= STM_CLAIM_BATCH) {
		u32 old[STM_CLAIM_BATCH];
#pragma unroll
		for (u32 q = 0; q < STM_CLAIM_BATCH; q++)
			if (q < tx->nw) old[q] = ld_relaxed_gpu(claims + (wi[q] & mask));
		u32 other = 0; // the first word's holder, if another lane's
#pragma unroll
		for (u32 q = 0; q < STM_CLAIM_BATCH; q++)
			if (q < tx->nw && !other && old[q] != 0u && old[q] != me) other = old[q];
		if (other) {
			// No word taken: the words the lane already holds (handed over
			// by a sibling, or kept) are released; a word loaded free is not
			// the lane's.
			stm_claim_release<false>(claims, wi, mask, tx->nw, old, me);
			tx->holder = other;
			stm_unclaim_kept(g, tx);
			return false;
		}
#pragma unroll
		for (u32 q = 0; q < STM_CLAIM_BATCH; q++)
			if (q < tx->nw) old[q] = atomicCAS(claims + (wi[q] & mask), 0u, me);
		bool lost = false;
#pragma unroll
		for (u32 q = 0; q < STM_CLAIM_BATCH; q++) {
			const bool other = q < tx->nw && old[q] != 0u && old[q] != me;
			if (other && !lost) tx->holder = old[q];
			lost |= other;
		}
		if (lost) {
			// A word this call took (its swap saw 0), or that it already
			// held (a word a sibling handed over, stm_unlock_handoff, or
			// one kept from an earlier attempt), is released here; the
			// kept ones again by stm_unclaim_kept, which finds them free.
			stm_claim_release<true>(claims, wi, mask, tx->nw, old, me);
			stm_unclaim_kept(g, tx);
			return false;
		}
	} else {
		u32 j = 0;
		for (; j < tx->nw; j++) {
			const u32 old = atomicCAS(claims + (wi[j] & mask), 0u, me);
			if (old != 0u && old != me) {
				tx->holder = old;
				break;
			}
		}
		if (j < tx->nw) {
			for (u32 q = 0; q < j; q++) {
				const u32 c = wi[q] & mask;
				if (ld_relaxed_gpu(claims + c) == me) st_relaxed_gpu(claims + c, 0u);
			}
			stm_unclaim_kept(g, tx);
			return false;
		}
	}
	for (u32 q = 0; q < tx->held; q++) {
		bool used = false;
		for (u32 w = 0; w < tx->nw; w++) used |= (wi[w] & mask) == mine[q];
		if (!used && ld_relaxed_gpu(claims + mine[q]) == me) st_relaxed_gpu(claims + mine[q], 0u);
	}
	for (u32 w = 0; w < tx->nw; w++) mine[w] = wi[w] & mask;
	tx->held = tx->nw;
	tx->holder = 0; // an earlier failed claim's holder no longer applies
	return true;
}

// stm_contend is contention management before a warp's update
// transactions go to their servers (Options.Contention; g->contention 1
// check, 2 claims and check). Claims: a lane claims the items it writes,
// in write-set order, by compare-and-swap of their words in the claim
// table (item & claim_mask; 0 free, else the holder's tid + 1). A word
// another lane holds holds this attempt back: every claim the lane has is
// released, its state becomes STM_ST_DEFER (the client runs the ticket
// again, with a new snapshot; counted in CNT_DEFERRED, not an abort) and
// it sends nothing. Once it holds them all, the slots it kept from an
// earlier attempt that its write set no longer uses are released and its
// row of g->claimed lists the new ones. A lane held back STM_CLAIM_TRIES
// times in a row claims nothing. Check (both modes): after a fence the
// lane reads the newest logged write (wts) of every item it read and
// wrote; one newer than its snapshot is the conflict every server's
// first validation would find (wts only grows), so the attempt aborts here
// with the cause the server would give (read-write for an item read, else
// write-write), without the round trip, and keeps its claims
// (tx->keep); tx->need is the newest such write, which the warp's
// publication waits for, so that the next attempt reads after it (and,
// holding the claims, is the next to send). Claims are a hint only: the servers validate every request as
// before. Lane-parallel; all lanes call it.
__device__ void stm_contend(const stm_globals* g, stm_tx* tx, bool* upd) {
	const stm_set_row ri = stm_rs_items(g, tx->tid), wi = stm_ws_items(g, tx->tid);
	if (*upd && g->contention >= 2) {
		if (tx->defers >= STM_CLAIM_TRIES) {
			stm_unclaim_kept(g, tx);
		} else if (!stm_claim(g, tx)) {
			stm_fail(tx, STM_ST_DEFER, 0);
			tx->defers++;
			*upd = false;
		} else {
			tx->defers = 0;
		}
	}
	if (*upd) {
		__threadfence(); // the claims before the reads of wts
		bool rw = false, ww = false;
		u64 top = 0;
		for (u32 q = 0; q < tx->nr; q++) {
			const u64 w = stm_wts_read(g, ri[q]);
			rw |= w > tx->snap;
			top = max(top, w);
		}
		for (u32 w = 0; w < tx->nw; w++) {
			const u64 x = stm_wts_read(g, wi[w]);
			ww |= x > tx->snap;
			top = max(top, x);
		}
		if (rw || ww) {
			stm_fail(tx, STM_ST_ABORT + (rw ? STM_READ_WRITE : STM_WRITE_WRITE), 0);
			tx->keep = tx->held > 0;
			tx->need = top;
			*upd = false;
		}
	}
}

__device__ __forceinline__ stm_req* stm_req_slot(const stm_globals* g, u32 p, u64 s) {
	return (stm_req*)g->req_ring + (u64)p * (g->ring_mask + 1) + (s & g->ring_mask);
}
__device__ __forceinline__ stm_fin* stm_fin_slot(const stm_globals* g, u32 p, u64 s) {
	return (stm_fin*)g->fin_ring + (u64)p * (g->ring_mask + 1) + (s & g->ring_mask);
}

// stm_post queues a message at server p (one lane calls it): it takes the
// next slot of the ring whose tail counters are at tails (CTL_SPACING
// words apart) and slots slot_of gives, fill writes the message's fields,
// and a release store of its seq publishes it to the server. A server has
// at most one message of each kind of each client warp outstanding, and
// each of its rings has a slot for every client warp, so a slot is free
// when it is taken.
template <typename M, typename Fill>
__device__ __forceinline__ void stm_post(const stm_globals* g, u64 tails, M* (*slot_of)(const stm_globals*, u32, u64),
					 u32 p, Fill fill) {
	u64 s = atomicAdd((unsigned long long*)((u64*)tails + (u64)p * CTL_SPACING), 1ull);
	M* m = slot_of(g, p, s);
	fill(m);
	st_release_gpu(&m->seq, s + 1);
}

// stm_send queues request kind of warp's lanes mask at server p (stm_post);
// sent is the global timer when the warp began sending the round, from
// which the stage counters time the request.
__device__ void stm_send(const stm_globals* g, u32 p, u32 warp, u32 mask, u32 kind, u32 cseq, u64 sent) {
	stm_post(g, g->req_tail, stm_req_slot, p, [&](stm_req* r) {
		r->warp = warp;
		r->mask = mask;
		r->kind = kind;
		r->cseq = cseq;
		r->sent = sent;
	});
}

// stm_send_fin queues a finalize message at server p (stm_post); the
// receiver answers cseq once it has logged the transactions.
__device__ void stm_send_fin(const stm_globals* g, u32 p, u32 warp, u32 mask, u32 all, u64 t0, u32 cseq) {
	stm_post(g, g->fin_tail, stm_fin_slot, p, [&](stm_fin* f) {
		f->warp = warp;
		f->mask = mask;
		f->all = all;
		f->t0 = t0;
		f->cseq = cseq;
	});
}

// stm_await waits (all lanes) until at least one of the servers in
// pending answered request seq of warp and returns those that did (0: the
// run failed meanwhile): lane 0 polls the reply words (relaxed loads,
// backing off), then a fence orders the reads of the results after them.
// With ts, lane 0 adds to ts[0] each answer's time since sent (the global
// timer when the round was sent) and to ts[1] the answers.
__device__ u64 stm_await(const stm_globals* g, u64 pending, u32 warp, u32 seq, u32 lane, u64 deadline, u64 sent = 0, u64* ts = nullptr) {
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
		if (got && ts) {
			ts[0] += __popcll(got) * (globaltimer_ns() - sent);
			ts[1] += __popcll(got);
		}
		__threadfence();
	}
	got = __shfl_sync(FULL_MASK, got, 0);
	__syncwarp();
	return got;
}

// stm_await_all waits (all lanes) until every server in pending answered
// request seq of warp; false: the run failed meanwhile. Not inlined: only
// transactions of several partitions wait here.
__device__ __noinline__ bool stm_await_all(const stm_globals* g, u64 pending, u32 warp, u32 seq, u32 lane, u64 deadline) {
	while (pending) {
		const u64 got = stm_await(g, pending, warp, seq, lane, deadline);
		if (!got) return false;
		pending &= ~got;
	}
	return true;
}

#if STM_RETRY
// stm_rerun_reload takes over the attempt a server ran again and committed
// (result r has STM_RES_RERUN): the server wrote its snapshot, set sizes,
// read and write sets in this thread's rows, then a fence, then the
// result this lane read with a relaxed load; after this lane's fence it
// reloads them through L2.
__device__ __noinline__ void stm_rerun_reload(const stm_globals* g, stm_tx* tx, u64 r) {
	__threadfence();
	tx->snap = __ldcg((const unsigned long long*)g->tx_snap + tx->tid);
	tx->nr = __ldcg((const unsigned int*)g->tx_nr + tx->tid);
	tx->nw = __ldcg((const unsigned int*)g->tx_nw + tx->tid);
	tx->bad = (r & STM_RES_BAD) ? 1 : 0;
}
#endif

// STM_RES_SERVER_FLAGS are the flags the servers' share of commits
// (STM_POST, STM_RETRY) adds to a single-partition reply: none without it.
#if STM_POST
#define STM_RES_SERVER_FLAGS (STM_RES_SERVED | STM_RES_RERUN | STM_RES_BAD)
#else
#define STM_RES_SERVER_FLAGS 0ull
#endif

#include "stm/direct.cu"

// stm_commit_warp commits the update transactions of the warp and returns
// this lane's commit timestamp (0: not committed; tx->state says why). All
// lanes call it. *quit is set when the run failed. cy[0..3]: cycles of
// pre-validation, the round trips, write-back and publication; cy[4..5]
// (lane 0): nanoseconds from sending requests to seeing their answers, and
// the answers seen; with direct commits stm_commit_direct's (cy[6..9] its
// round phases), which leaves publication to the caller: *pub is the
// clock it must wait for (with the servers *pub is left alone).
__device__ u64 stm_commit_warp(const stm_globals* g, stm_tx* tx, bool have, u32 lane, u32 wid, u32* seq,
                               u64 deadline, u64* cy, bool* quit, u64* pub) {
	const u32 wbase = wid * 32;
	bool upd = have && tx->state == STM_ST_OK && !tx->ro && tx->nw > 0;
#if STM_DIRECT
	if (__ballot_sync(FULL_MASK, upd) == 0) return 0;
	return stm_commit_direct(g, tx, upd, lane, wbase, cy, pub);
#endif
	if (upd) {
		((u64*)g->tx_snap)[tx->tid] = tx->snap;
		((u32*)g->tx_nr)[tx->tid] = tx->nr;
		((u32*)g->tx_nw)[tx->tid] = tx->nw;
#if STM_RETRY
		((u64*)g->tx_ticket)[tx->tid] = tx->ticket; // a server may run the body again (serve.cu, stm_retry)
#endif
	}
	if (__ballot_sync(FULL_MASK, upd) == 0) return 0;
	__threadfence();
	u64 c0 = clock64();
	if (g->contention) {
		stm_contend(g, tx, &upd);
		if (__ballot_sync(FULL_MASK, upd) == 0) {
			// Nothing to send: wait for the writes the check found.
			if (!stm_publish(g, warp_max64(tx->need), lane, deadline)) *quit = true;
			return 0;
		}
	}
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
		const u64 sent = lane == 0 ? globaltimer_ns() : 0;
		for (u64 m = u1; m; m &= m - 1) {
			const u32 p = __ffsll(m) - 1;
			const u32 lanes = __ballot_sync(FULL_MASK, single && tx->pmask == (1ull << p));
			if (lane == 0) stm_send(g, p, wid, lanes, REQ_SINGLE, *seq, sent);
		}
		// Each server's batch is written back and marked done as soon as
		// its answer comes: a slow server does not hold up the others'
		// timestamps (and with them every client's publication).
		const u32 mine = single ? (u32)(__ffsll(tx->pmask) - 1) : 64;
		for (u64 pending = u1; pending;) {
			const u64 got = stm_await(g, pending, wid, *seq, lane, deadline, sent, cy + 4);
			if (!got) {
				*quit = true;
				return 0;
			}
			pending &= ~got;
			// This lane's answer (server.cu, stm_reply): STM_RES_FLAG |
			// cause, with the timestamp it took << 8, when aborted, else its
			// commit timestamp; with the servers' write-back (STM_POST) a
			// timestamp the server wrote back and marked done itself
			// (STM_RES_SERVED) is not the client's to mark, and with their
			// re-runs (STM_RETRY) a committed re-run's sets are reloaded and
			// an aborted attempt whose sets a dropped re-run overwrote is not
			// recorded.
			u64 t1 = 0, tm = 0, srv = 0; // the commit timestamp; the one to mark done (also a hole's); the one the server marked
			if (mine < 64 && ((got >> mine) & 1)) {
				const u64 r = ld_relaxed_gpu((const u64*)g->res + tx->tid);
				const u64 v = r & ~STM_RES_SERVER_FLAGS;
				if (r & STM_RES_FLAG) {
					stm_fail(tx, STM_ST_ABORT + (u32)(v & 0xFF), 0);
					tm = (v & ~STM_RES_FLAG) >> 8;
#if STM_RETRY
					if (r & STM_RES_RERUN) tx->lost = 1;
#endif
				} else {
					t1 = tm = v;
#if STM_RETRY
					if (r & STM_RES_RERUN) stm_rerun_reload(g, tx, r);
#endif
				}
#if STM_POST
				if (r & STM_RES_SERVED) {
					srv = tm;
					tm = 0;
				}
#endif
			}
			const u64 w0 = clock64();
			stm_install_all(g, tx, srv ? 0 : t1);
			u64 t = stm_mark_done(g, tm);
#if STM_POST
			t = max(t, warp_max64(srv));
#endif
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
			const u64 sent = lane == 0 ? globaltimer_ns() : 0;
			if (lane == 0) stm_send(g, p, wid, lanes, REQ_PREPARE, *seq, sent);
			if (!stm_await(g, 1ull << p, wid, *seq, lane, deadline, sent, cy + 4)) {
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
		*seq += 1;
		for (u64 m = prepared; m; m &= m - 1) {
			const u32 p = __ffsll(m) - 1;
			const u32 lanes = __ballot_sync(FULL_MASK, multi && ((tx->pmask >> p) & 1));
			if (lane == 0) stm_send_fin(g, p, wid, lanes, surv, t0, *seq);
		}
		const u64 t2 = multi ? t0 + __popc(surv & lanemask_lt(lane)) : 0;
		if (surv) {
			const u64 w0 = clock64();
			stm_install_all(g, tx, t2);
			const u64 t = stm_mark_done(g, t2);
			top = t > top ? t : top;
			cwb += clock64() - w0;
		}
		if (multi) ts = t2;
		// The receivers log the finalized transactions from their write
		// sets (tx_nw, ws_item), which the warp's next transactions
		// overwrite: wait until every prepared server has logged them.
		if (!stm_await_all(g, prepared, wid, *seq, lane, deadline)) {
			*quit = true;
			return 0;
		}
	}
	u64 c2 = clock64();
	if (upd) cy[1] += c2 - c1 - cwb;
	if (ts) cy[2] += cwb;

	// Claims end with the write-back (or the server's abort); a lane that
	// keeps them aborted in stm_contend and sent nothing.
	if (tx->held && !tx->keep) stm_unclaim_kept(g, tx);

	// Publication: the clock passes this warp's batches (and the writes
	// stm_contend's check found) before the warp starts new transactions.
	const u64 need = warp_max64(tx->need);
	top = need > top ? need : top;
	if (!stm_publish(g, top, lane, deadline)) {
		*quit = true;
		return 0;
	}
	if (ts) cy[3] += clock64() - c2;
	return ts;
}
