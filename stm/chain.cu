// stm/chain.cu: chained attempts (Options.Chain; compiled in with
// STM_CHAIN, the passes a round): a lane whose update attempt lost runs
// again in its round with its items locked (stm_chain_begin,
// stm_chain_end). Included by client.cu after the round's bookkeeping
// (stm_count_abort, stm_record, stm_attempt) and before the client kernel
// (stm_client), which runs the passes; the lock words' hand-over it builds
// on is in direct.cu.
#if STM_CHAIN
#if !STM_DIRECT
#error "chained attempts (STM_CHAIN) need direct commits (STM_DIRECT)"
#endif
// ---- chained attempts (Options.Chain) -------------------------------------
//
// Under hot items most update attempts of a warp lose inside it: the
// in-warp check lets one of the lanes that touch an item commit, and the
// others retry next round, with new snapshots, against every other warp's
// commits of the same items. A chained attempt runs them again in the same
// round, after the lanes they lost to have committed: the lane locks the
// items its lost attempt wrote (stm_claim: the same words its retry will
// write, if its body writes the same items), the warp takes one
// timestamp for each lane that got its locks (the commit protocol's lock,
// fence, timestamp order), and the lane runs its body again reading the
// state just before that timestamp (stm_begin: snapshot chain - 1; each
// read checked by stm_chain_look). What it reads is then what it commits
// on: it writes back at its timestamp with no further validation, if
// every item it wrote is one it locked. Lanes whose lost attempt met a
// newer write at validation chain too (keeping the locks they had), and,
// in a round whose bodies took longer than its commit, lanes held
// back at their locks. A committed lane hands the words it wrote to the
// sibling that lost to it (stm_unlock_handoff). The warp publishes once,
// after.

// stm_chain_begin turns this lane's lost attempt (in-warp, or a newer
// write at validation; with held_back, warp-uniform, also one held back
// at its locks, STM_ST_DEFER; a write set of at most STM_CLAIM_BATCH
// items) into a chained one when it locks that attempt's write items: the
// lost attempt is counted (a held-back one as held back) and recorded (as
// the round's end would), the lane's
// lock words go to tx->cw (tx->cwn of them), the warp takes the chained lanes'
// timestamps (one atomic add: *cts, 0 for a lane not chained) and each
// chained lane starts a new attempt with tx->chain = *cts. A lane that
// did not get its locks released the ones it took (stm_claim) and keeps
// its lost attempt for the round's end. Returns (warp-uniform) whether
// any lane chained. All lanes call it.
__device__ bool stm_chain_begin(const stm_globals* g, stm_tx* tx, bool have, bool held_back, u32 lane, u64* cnt, u64* cts) {
	const bool deferred = held_back && have && tx->state == STM_ST_DEFER;
	const bool lost = have && (stm_chain_lost(tx) || (deferred && stm_chain_fits(tx)));
	*cts = 0;
	if (!__any_sync(FULL_MASK, lost)) return false;
	const bool mine = lost && stm_claim(g, tx);
	const u32 lanes = __ballot_sync(FULL_MASK, mine);
	if (!lanes) return false;
	if (mine) {
		if (deferred)
			cnt[CNT_DEFERRED]++; // held back at its locks: not an abort
		else
			stm_count_abort(g, tx, cnt);
		cnt[CNT_CHAINED]++;
		stm_lock_words(g, tx, tx->cw);
		tx->cwn = tx->nw;
	}
	const u64 base = stm_take_timestamps(g, lanes, lane); // before every chained lane's reads
	if (mine) {
		*cts = base + __popc(lanes & lanemask_lt(lane));
		stm_attempt(tx);
		tx->chain = *cts;
	}
	return true;
}

// stm_chain_end commits this lane's chained attempt (cts its timestamp,
// tx->cw the tx->cwn lock words it holds; cts 0: none) after its body ran: one
// that is still live and wrote only items whose words it holds raises
// their wts and writes its versions back at cts (stm_install); then every
// chained lane releases its locks and marks cts done (a failed one's is a
// hole), and *pub takes the newest. Returns the lane's commit timestamp:
// cts when its chained attempt committed an update, 0 when it did not
// (or turned read-only), ts (its round's) for a lane not chained. All
// lanes call it.
__device__ u64 stm_chain_end(const stm_globals* g, stm_tx* tx, u64 cts, u64 ts, u64* pub, u64* cnt) {
	bool upd = cts && tx->state == STM_ST_OK && !tx->ro && tx->nw > 0;
	if (upd) {
		const stm_set_row wi = stm_ws_items(g, tx->tid);
		for (u32 j = 0; j < tx->nw; j++) {
			if (!stm_chain_own(tx, wi[j])) { // written where it holds no lock: not at cts
				stm_fail(tx, STM_ST_ABORT + STM_WRITE_WRITE, 0);
				upd = false;
				break;
			}
		}
		if (upd)
			for (u32 j = 0; j < tx->nw; j++) stm_wts_note(g, wi[j], cts);
	}
	stm_install_all(g, tx, upd ? cts : 0); // its last fence: the versions and wts before the locks' release
	if (cts) {
		stm_release_words(g, tx->cw, tx->cwn);
		tx->held = 0;
	}
	*pub = max(*pub, stm_mark_done(g, cts));
	if (upd) cnt[CNT_CHAIN_COMMITS]++;
	return cts ? (upd ? cts : 0) : ts;
}
#endif
