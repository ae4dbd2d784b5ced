// stm/serve.cu: a server's share of single-partition commits beyond the
// default protocol (Options.ServerCommit; included by server.cu after the
// validation and the turns it uses): the write-back after the final check
// (STM_POST) and conflicting update attempts run again by the server
// before their turn (STM_RETRY, which compiles STM_POST in too).
//
// With STM_POST a request is committed as in the default protocol (groups
// included), and after its final check its worker writes back its
// survivors' versions and marks every timestamp it took done (holes too)
// before the reply (stm_post_install), so no client round trip stands
// between a commit and its publication; the clients skip their
// write-back. It also releases the request's claims (ContentionClaims).
//
// With STM_RETRY a worker runs the conflicting update attempts of a
// single-partition request of one table load again before it reserves
// any slot (stm_retry): it waits until the commit clock passes the newest
// logged write of every item they accessed (the writes they conflicted
// with), runs their bodies again from the clock as snapshot, as their
// clients would, drops a re-run that left the partition or meets another
// lane of the request, and validates the request again; the survivors
// then take their turn as any request's do. A re-run is an ordinary
// attempt from one snapshot, validated against every commit after it: the
// client's round trip is what it saves.

#if STM_POST
// stm_post_install writes back (stm_install, as a client would), after a
// single-partition request's final check, the versions of its lanes of
// slots that committed (cause 0; lane l's timestamp first + its rank in
// slots) and marks every timestamp of slots done (the others' as holes),
// as their clients would after the reply; *flags gets STM_RES_SERVED for
// each lane of slots, so that its client does neither; with claims, every
// lane of the request releases its claims (stm_unclaim<true>). Another
// writer of an item commits only from a snapshot at or after this commit
// (validation), so versions stay in timestamp order per item. All lanes
// call it.
__device__ __forceinline__ void stm_post_install(const stm_globals* g, u32 lane, const stm_job& J, u32 slots, u64 first, u32 cause, u64* flags) {
	const bool mine = (slots >> lane) & 1;
	const u64 ts = first + __popc(slots & lanemask_lt(lane));
	stm_install<true>(g, J.tid, mine && cause == 0 ? J.nw : 0, ts);
	if (mine) {
		stm_set_done(g, ts);
		*flags |= STM_RES_SERVED;
	}
	if (g->contention >= 2 && J.in) stm_unclaim<true>(g, J.tid, J.nw);
}
#endif

#if STM_RETRY
// stm_sets_meet reports whether transactions a and b conflict: one writes
// an item the other reads or writes (read sets ra, rb of nra, nrb items,
// write sets wa, wb of nwa, nwb, in global memory, read through L2).
__device__ bool stm_sets_meet(const u32* ra, u32 nra, const u32* wa, u32 nwa, const u32* rb, u32 nrb, const u32* wb, u32 nwb) {
	for (u32 i = 0; i < nwa; i++) {
		const u32 it = __ldcg((const unsigned int*)wa + i);
		for (u32 j = 0; j < nrb; j++)
			if (__ldcg((const unsigned int*)rb + j) == it) return true;
		for (u32 j = 0; j < nwb; j++)
			if (__ldcg((const unsigned int*)wb + j) == it) return true;
	}
	for (u32 i = 0; i < nwb; i++) {
		const u32 it = __ldcg((const unsigned int*)wb + i);
		for (u32 j = 0; j < nra; j++)
			if (__ldcg((const unsigned int*)ra + j) == it) return true;
	}
	return false;
}

// stm_rerun_body runs the workload's body for a server's re-run (not
// inlined: the worker keeps its registers).
__device__ __noinline__ void stm_rerun_body(stm_tx* tx) { stm_body(tx); }

// stm_rerun runs again client thread tid's ticket (its row of tx_ticket)
// in the thread's rows: a new attempt (the draws repeat) from the clock as
// snapshot, as a client's attempt is. It accepts the re-run when it began,
// did not fail and is an update of partition p only; then the thread's
// snapshot and set sizes are written to its rows. Returns whether it
// accepted it, with its set sizes and workload check. The lane calls it
// alone.
__device__ bool stm_rerun(const stm_globals* g, u32 p, u32 tid, u64 deadline, u32* nr, u32* nw, u32* bad) {
	stm_tx tx;
	stm_tx_start(&tx, g, cg64(g->tx_ticket, tid), tid, deadline, 0, 0);
	stm_rerun_body(&tx);
	const bool acc = tx.begun && tx.state == STM_ST_OK && !tx.ro && tx.nw > 0 && tx.pmask == (1ull << p);
	if (acc) {
		((u64*)g->tx_snap)[tid] = tx.snap;
		((u32*)g->tx_nr)[tid] = tx.nr;
		((u32*)g->tx_nw)[tid] = tx.nw;
		*nr = tx.nr;
		*nw = tx.nw;
		*bad = tx.bad;
	}
	return acc;
}

// stm_drop_meeting returns the lanes of acc (re-runs) that meet another
// lane of keep (kept lanes: survivors and re-runs) and are dropped, in
// lane order: the survivors' sets were prevalidated by the client, a
// re-run's were not, and of two re-runs that meet the later lane is kept.
// nr, nw: the lane's set sizes (its rows of client warp cw). All lanes
// call it.
__device__ u32 stm_drop_meeting(const stm_globals* g, u32 lane, u32 cw, u32 keep, bool acc, u32 nr, u32 nw) {
	const u64 tid = (u64)cw * 32 + lane;
	const u32* ri = (const u32*)g->rs_item + tid * (u32)g->r_cap;
	const u32* wi = (const u32*)g->ws_item + tid * (u32)g->w_cap;
	u32 drop = 0;
	for (u32 c = __ballot_sync(FULL_MASK, acc); c; c &= c - 1) {
		const u32 l = __ffs(c) - 1;
		const u32 nrl = __shfl_sync(FULL_MASK, nr, l), nwl = __shfl_sync(FULL_MASK, nw, l);
		const u64 tl = (u64)cw * 32 + l;
		const u32* rl = (const u32*)g->rs_item + tl * (u32)g->r_cap;
		const u32* wl = (const u32*)g->ws_item + tl * (u32)g->w_cap;
		const bool hit = lane != l && ((keep >> lane) & 1) && stm_sets_meet(ri, nr, wi, nw, rl, nrl, wl, nwl);
		if (__any_sync(FULL_MASK, hit)) {
			keep &= ~(1u << l);
			drop |= 1u << l;
		}
	}
	return drop;
}

// STM_RETRY_ROUNDS is how many times a worker runs a conflicting attempt
// again before its turn.
#define STM_RETRY_ROUNDS 2

// stm_retry runs again, before any slot is reserved, the update attempts
// of a single-partition request of one table load that failed its first
// validation for a read-write or write-write conflict, up to
// STM_RETRY_ROUNDS times: the warp waits until the commit clock passes
// the newest logged write (wts) of every item those lanes accessed
// (stm_publish, which advances the clock meanwhile: every timestamp at or
// before them is held by a client lane whose request was answered, so the
// wait ends), runs each such lane's body again from the clock
// (stm_rerun), drops a re-run that meets another kept lane
// (stm_drop_meeting), and validates the request again (stm_job_load,
// stm_validate_table): a kept re-run and an earlier survivor take the new
// cause, every other lane keeps its own. *flags gets STM_RES_RERUN for a
// lane whose rows a re-run overwrote (the client reloads them or does not
// record the attempt), with STM_RES_BAD when its kept re-run's workload
// check failed. Returns false when the run failed. Thread mapping: lane l
// serves client lane l. All lanes call it.
__device__ bool stm_retry(const stm_globals* g, stm_log& L, stm_scratch* S, u32 p, u32 lane, stm_job& J, u32* cause, u64* flags, u64 deadline) {
	for (u32 round = 0; round < STM_RETRY_ROUNDS; round++) {
		const bool conf = J.in && (*cause == 1 + STM_READ_WRITE || *cause == 1 + STM_WRITE_WRITE);
		if (!__any_sync(FULL_MASK, conf)) return true;
		u64 top = 0;
		if (conf) {
			const u64 rb = (u64)J.tid * (u32)g->r_cap, wb = (u64)J.tid * (u32)g->w_cap;
			for (u32 j = 0; j < J.nr; j++) top = max(top, stm_wts_read(g, cg32(g->rs_item, rb + j)));
			for (u32 j = 0; j < J.nw; j++) top = max(top, stm_wts_read(g, cg32(g->ws_item, wb + j)));
		}
		if (!stm_publish(g, warp_max64(top), lane, deadline)) return false;
		u32 nr = J.nr, nw = J.nw, bad = 0;
		const bool acc = conf && stm_rerun(g, p, J.tid, deadline, &nr, &nw, &bad);
		__threadfence(); // the re-runs' rows before the checks below and the validation
		__syncwarp();
		const u32 keep = __ballot_sync(FULL_MASK, (J.in && *cause == 0) || acc);
		const u32 drop = stm_drop_meeting(g, lane, J.cw, keep, acc, nr, nw);
		const bool kept = acc && !((drop >> lane) & 1);
		if (conf) *flags = STM_RES_RERUN | (kept && bad ? STM_RES_BAD : 0);
		const bool again = kept || (J.in && *cause == 0);
		const u32 old = *cause;
		stm_job_load(g, lane, J, J.cw, J.mask, J.kind, J.seq);
		const u32 c2 = stm_validate_table(g, L, S, p, lane, J);
		*cause = again ? c2 : old;
	}
	return true;
}
#endif
