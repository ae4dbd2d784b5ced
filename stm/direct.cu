// stm/direct.cu: direct commits (Options.Commit, CommitDirect; compiled in
// with STM_DIRECT): the lock words' release and hand-over, the warp's
// timestamps, and stm_commit_direct, TL2's commit over CSMV's versions
// without the servers. Included by commit.cu after the claims
// (stm_claim, STM_CLAIM_BATCH) and the newest-write loads it calls, and
// before stm_commit_warp, which runs it; the chained attempts that build
// on it are in chain.cu.
#if STM_DIRECT
// stm_lock_words puts the lock words of tx's write items (item &
// claim_mask, the words stm_claim takes) in c, ~0u past tx->nw (write sets
// of at most STM_CLAIM_BATCH items; none past it). The lane calls it alone.
__device__ __forceinline__ void stm_lock_words(const stm_globals* g, const stm_tx* tx, u32* c) {
	const stm_set_row wi = stm_ws_items(g, tx->tid);
#pragma unroll
	for (u32 q = 0; q < STM_CLAIM_BATCH; q++) c[q] = q < tx->nw && tx->nw <= STM_CLAIM_BATCH ? wi[q] & (u32)g->claim_mask : ~0u;
}

// stm_store_words stores to[q] (0 releases; a sibling's tid + 1 hands the
// word over, stm_unlock_handoff) in each of the n lock words c[0..n) (n at
// most STM_CLAIM_BATCH) that this lane holds, each word once (a word
// listed twice is stored once, at its first listing), by stores: with
// direct commits only a word's holder releases it. to null: 0 in every
// word. The lane calls it alone.
__device__ __forceinline__ void stm_store_words(const stm_globals* g, const u32* c, const u32* to, u32 n) {
	u32* claims = (u32*)g->claims;
#pragma unroll
	for (u32 q = 0; q < STM_CLAIM_BATCH; q++) {
		if (q >= n) break;
		bool dup = false;
#pragma unroll
		for (u32 v = 0; v < q; v++) dup |= c[v] == c[q];
		if (!dup) st_relaxed_gpu(claims + c[q], to ? to[q] : 0u);
	}
}

// stm_release_words releases the n lock words c[0..n) that this lane
// holds (stm_store_words with 0). The lane calls it alone.
__device__ __forceinline__ void stm_release_words(const stm_globals* g, const u32* c, u32 n) { stm_store_words(g, c, nullptr, n); }

// stm_unlock_direct releases the locks of a lane whose direct commit
// installed its versions: the words of its write items, which stm_claim
// took (tx->held is its write set's size), each word once, by a store:
// with direct commits only a word's holder releases it, so the load that
// stm_unclaim makes first (a round trip while the locks are held) is not
// needed. Write sets above STM_CLAIM_BATCH take stm_unclaim_kept. The
// lane calls it alone.
__device__ __forceinline__ void stm_unlock_direct(const stm_globals* g, stm_tx* tx) {
	if (tx->nw > STM_CLAIM_BATCH) {
		stm_unclaim_kept(g, tx);
		return;
	}
	u32 c[STM_CLAIM_BATCH];
	stm_lock_words(g, tx, c);
	stm_release_words(g, c, tx->nw);
	tx->held = 0;
}

#if STM_CHAIN
// stm_chain_lost reports whether tx's attempt lost in a way a chained
// attempt takes up: an update of at most STM_CLAIM_BATCH writes that
// aborted read-write or write-write inside its warp (STM_AB_IN_WARP) or on
// a newer write (detail 0). stm_unlock_handoff hands words to lanes whose
// attempt lost inside the warp and stm_chain_begin claims for every lane
// this names: through this one predicate they agree, so no word handed
// over is left held.
// stm_chain_fits reports whether tx's attempt is an update whose write set a
// chained attempt can lock (1 to STM_CLAIM_BATCH items).
__device__ __forceinline__ bool stm_chain_fits(const stm_tx* tx) { return !tx->ro && tx->nw > 0 && tx->nw <= STM_CLAIM_BATCH; }
__device__ __forceinline__ bool stm_chain_lost(const stm_tx* tx) {
	return stm_chain_fits(tx) &&
	       (tx->state == STM_ST_ABORT + STM_READ_WRITE || tx->state == STM_ST_ABORT + STM_WRITE_WRITE) &&
	       (tx->detail == STM_AB_IN_WARP || tx->detail == 0);
}

// stm_unlock_handoff releases the locks of a lane whose direct commit
// installed its versions (committed; a write set of at most
// STM_CLAIM_BATCH items, else stm_unlock_direct), handing each word that
// a sibling's attempt, lost to the in-warp check, wrote to the lowest such
// sibling (its tid + 1 stored in place of 0): that sibling's chained claim
// (stm_chain_begin, stm_claim) then finds the word its own, where other
// warps would otherwise take it first; a claim that fails on another word
// releases it. Cost: per losing lane, four shuffles and sixteen compares
// in every lane. All lanes call it, after stm_install_all's fence.
__device__ __forceinline__ void stm_unlock_handoff(const stm_globals* g, stm_tx* tx, bool committed, u32 lane) {
	if (committed && tx->nw > STM_CLAIM_BATCH) {
		stm_unlock_direct(g, tx);
		committed = false;
	}
	const bool wants = stm_chain_lost(tx) && tx->detail == STM_AB_IN_WARP;
	u32 words[STM_CLAIM_BATCH], mine[STM_CLAIM_BATCH], want[STM_CLAIM_BATCH], to[STM_CLAIM_BATCH];
	stm_lock_words(g, tx, words);
#pragma unroll
	for (u32 q = 0; q < STM_CLAIM_BATCH; q++) {
		const u32 w = words[q];
		mine[q] = committed ? w : ~0u;
		want[q] = wants ? w : ~0u;
		to[q] = 0;
	}
	if (__any_sync(FULL_MASK, committed))
		for (u32 ws = __ballot_sync(FULL_MASK, wants); ws; ws &= ws - 1) {
			const u32 j = __ffs(ws) - 1;
			u32 w[STM_CLAIM_BATCH];
#pragma unroll
			for (u32 v = 0; v < STM_CLAIM_BATCH; v++) w[v] = __shfl_sync(FULL_MASK, want[v], j);
#pragma unroll
			for (u32 q = 0; q < STM_CLAIM_BATCH; q++) {
				bool hit = false;
#pragma unroll
				for (u32 v = 0; v < STM_CLAIM_BATCH; v++) hit |= w[v] == mine[q];
				if (hit && !to[q] && mine[q] != ~0u) to[q] = tx->tid - lane + j + 1;
			}
		}
	if (committed) {
		stm_store_words(g, mine, to, tx->nw);
		tx->held = 0;
	}
	// The hand-over stores before the siblings' claims (stm_chain_begin):
	// a claim ordered before the store it wants would fail on the giver's
	// id, and the word, then named for that sibling, would stay held.
	__syncwarp();
}
#endif

// stm_take_timestamps takes one commit timestamp for each lane of lanes
// (a warp mask, not 0), which hold the locks of their write items, and
// returns the first, in every lane: a warp barrier (which orders every
// lane's lock before what lane 0 does next), lane 0's fence (cumulative:
// the locks of every lane before the add), its add to g->next, then a
// fence in every lane (lane 0's: the add before what follows; every
// lane's: its lock's compare-and-swap, which read the previous holder's
// release, before what it reads next) and a warp barrier (lane 0's add
// before every lane's next reads): the commit protocol's lock, fence,
// timestamp order. Two fences, with the locks held: a fence in every
// lane before the first barrier and one in lane 0 after the add, which
// this had until 2026-12-01, added nothing to that order, and without
// them the commits a second rose 2.1-2.9% under Zipf 0.99 and 0.2-1.2%
// uniform (H200, 64K accounts, 1 and 2 rounds at 0% and 10% read-only).
// Lane l of lanes takes the first + the lanes of lanes below l. All
// lanes call it.
__device__ __forceinline__ u64 stm_take_timestamps(const stm_globals* g, u32 lanes, u32 lane) {
	__syncwarp();
	u64 base = 0;
	if (lane == 0) {
		__threadfence();
		base = atomicAdd((unsigned long long*)g->next, (unsigned long long)__popc(lanes)) + 1;
	}
	__threadfence();
	__syncwarp();
	return __shfl_sync(FULL_MASK, base, 0);
}

// stm_commit_direct commits the warp's update transactions with no server
// (Options.Commit, CommitDirect): TL2's commit, with the claim table's words as
// the items' locks, over the multi-version rings and in-order clock of
// the server protocol. The warp's lanes first settle the conflicts among
// them (stm_prevalidate). An update lane locks the words of its write
// items (stm_claim; a word another lane holds holds the attempt back,
// STM_ST_DEFER, with every lock released). After a fence the warp's lane 0
// takes one timestamp for each lane that holds its locks (one atomic add
// on g->next), and after another fence each such lane validates: an item
// it read whose newest write (wts) is newer than its snapshot, or whose
// word another lane holds, is a read-write conflict; an item it writes
// with a newer write a write-write one. A lane that passes raises its
// items' wts to its timestamp, installs its versions (stm_install) and
// releases its locks (with chained attempts, STM_CHAIN, handing the words
// a sibling that lost to it in the warp wrote to that sibling,
// stm_unlock_handoff). One that fails releases them too, at once (with
// chained attempts, one that failed on a newer write keeps them into the
// chained attempt it runs next, stm_chain_begin): one that failed on a
// newer write then waits, with its warp, until the clock passes the
// newest write it met (tx->need), so that its next round's attempt reads
// after that write (a chained attempt runs before that wait, reading the
// state just before its own timestamp). (Until 2026-11-30 such a lane
// kept its locks over the retry, so that it would commit next under hot
// items; but a kept lock is held for a whole warp round, body and
// commit, and under Zipf 0.99 the hot block waited on it. Releasing them measured 1.02x,
// 1.22x and 1.14x the commits/s at 0%, 10% and 50% read-only under Zipf
// 0.99 on an H200, 2026-11-30, with the rest of that day's changes.)
// Keeping no lock over a retry also means that two lanes that each read
// what the other writes cannot keep each other out (measured once: the
// memcached workload's PUTs, which read the other ways of their set); a
// lock kept into a chained attempt is released at that pass's end
// (stm_chain_end), whatever the attempt's outcome.
// Every timestamp taken is marked done (a failed lane's is a hole);
// *pub gets the newest of them and of the writes failed lanes met, which
// the caller waits for the clock to pass (stm_client, after the chained
// attempts of stm_chain_begin). Why
// validation suffices: a commit holds its locks from before it takes its
// timestamp until after it raised wts, so one with an earlier timestamp
// that wrote an item this lane read is still locked or visible in wts when
// the lane looks; one that locks the item after the lane looked takes its
// timestamp after the lane's (fences on both sides order the lock, the
// counter and the look), so it serializes after this lane. Writers of an
// item hold its lock in turn, so its versions are installed in timestamp
// order. No lane waits for a lock: one holding locks waits only for the
// clock, which waits only for lanes past their locks. All lanes call it;
// upd says which lanes have an update transaction to commit. cy (each
// lane its own attempt's): [0] the in-warp check, [1] locking and the
// timestamp, [4] validation and the wts raise, [2] write-back;
// [6..9] (lane 0, every round) the same phases for the warp's round
// (ServerStats.Phases; the caller times publication, [3] and [10]).
__device__ u64 stm_commit_direct(const stm_globals* g, stm_tx* tx, bool upd, u32 lane, u32 wbase, u64* cy, u64* pub) {
	const stm_set_row ri = stm_rs_items(g, tx->tid);
	const u32 me = tx->tid + 1, mask = (u32)g->claim_mask;
	const u64 c0 = clock64();
	const bool upd0 = upd;
	// Conflicts inside the warp first (Algorithm 1): the lanes left have
	// disjoint write sets, so their locks conflict only with other warps'.
	stm_prevalidate(g, tx, &upd, lane, wbase);
	const u64 cp = clock64();
	if (upd0) cy[0] += cp - c0;
	if (lane == 0) cy[6] += cp - c0;
	const bool upd1 = upd;
	if (upd) {
		if (stm_claim(g, tx)) {
			tx->defers = 0;
		} else {
			stm_fail(tx, STM_ST_DEFER, 0);
			tx->defers++;
			upd = false;
		}
	}
	const u32 lanes = __ballot_sync(FULL_MASK, upd);
	const u64 base = lanes ? stm_take_timestamps(g, lanes, lane) : 0; // before every lane's validation
	const u64 taken = upd ? base + __popc(lanes & lanemask_lt(lane)) : 0;
	const u64 cl = clock64();
	if (upd1) cy[1] += cl - cp;
	if (lane == 0) cy[7] += cl - cp;
	if (upd) {
		// The locks of the items read first, then a fence, then the newest
		// writes: a lock seen free after its holder released it shows the
		// wts that holder raised before its release (stm_install's fence).
		// Read the other way round, a commit could raise wts after the
		// load and release before the look at its lock, unseen by both
		// (measured: a lost update in the memcached workload, whose PUTs
		// read items they do not write).
		// An item this lane also writes has its word held by the lane:
		// not loaded (a transfer reads only what it writes, and skips the
		// loads and the fence).
		bool rw = false, ww = false, held = false, looked = false;
		const u32* claims = (const u32*)g->claims;
		u32 own[STM_CLAIM_BATCH];
		stm_lock_words(g, tx, own);
		for (u32 q = 0; q < tx->nr; q++) {
			const u32 w = ri[q] & mask;
			bool mine = false;
#pragma unroll
			for (u32 j = 0; j < STM_CLAIM_BATCH; j++) mine |= own[j] == w;
			if (mine) continue;
			const u32 c = ld_relaxed_gpu(claims + w);
			held |= c != 0u && c != me;
			looked = true;
		}
		if (looked) fence_acq_rel_gpu();
		const u64 top = stm_newest_writes(g, tx, &rw, &ww);
		if (rw || ww || held) {
			stm_fail(tx, STM_ST_ABORT + (rw || held ? STM_READ_WRITE : STM_WRITE_WRITE), held ? STM_AB_LOCK_MET : 0);
			// No lane keeps its locks over a retry (a kept lock is held
			// for a whole warp round, where a commit holds it for a few
			// round trips). One that lost to a newer write still waits,
			// with its warp, until the clock passes it (tx->need).
#if STM_CHAIN
			// One that lost to a newer write chains next (stm_chain_begin,
			// which claims for every lane stm_chain_lost names) and keeps
			// its locks for it.
			if (!stm_chain_lost(tx)) stm_unlock_direct(g, tx);
#else
			stm_unlock_direct(g, tx);
#endif
			if (!held) tx->need = top;
			upd = false;
		}
	}
	const u64 ts = upd ? taken : 0;
	if (upd) { // the lock makes this lane the item's only writer
		const stm_set_row wi = stm_ws_items(g, tx->tid);
		for (u32 w = 0; w < tx->nw; w++) stm_wts_note(g, wi[w], ts);
	}
	const u64 c1 = clock64();
	if (taken) cy[4] += c1 - cl;
	if (lane == 0) cy[8] += c1 - cl;
	stm_install_all(g, tx, ts); // its last fence: the versions and wts before the locks' release
#if STM_CHAIN
	stm_unlock_handoff(g, tx, ts != 0, lane);
#else
	if (ts) stm_unlock_direct(g, tx);
#endif
	u64 top = stm_mark_done(g, taken);
	const u64 c2 = clock64();
	if (ts) cy[2] += c2 - c1;
	if (lane == 0) cy[9] += c2 - c1;
	*pub = max(top, warp_max64(tx->need)); // published by the caller (stm_client), after any chained attempts
	return ts;
}
#endif
