// stm/client.cu: CSMV's client side: transactions run by client warps,
// write-back and publication in commit order, the history records,
// admission and latency counts, and the client kernel; the commit path
// (pre-validation, requests to the servers, stm_commit_warp) is commit.cu
// and the chained attempts chain.cu, included below (device.cuh describes
// the protocol).

#include "stm/device.cuh"
#include "stm/workload.cuh"

// STM_INSTALL_REG is the largest write set stm_install keeps in
// registers between its passes.
#define STM_INSTALL_REG 4

// stm_install writes the versions of client thread tid's transaction (the
// first nw entries of its write set) with timestamp ts over the oldest slot
// of each item; the commit protocol makes this transaction the item's only
// writer now. A slot is first marked empty (STM_NO_VERSION), then, after a
// fence, gets its value, its version and becomes the head: a reader that
// validated a slot's old version (stm_ring_read reads version, value,
// version) cannot have read the new value. The value needs no fence before
// its version: a reader accepts version ts only once the clock has passed
// ts, which happens after the final fence of the batch. remote: the caller
// is a server's worker (serve.cu, stm_post_install), which reads the
// client thread's write set through L2; a client reads its own as it
// wrote it. All lanes call it (two fences per warp).
template <bool remote>
__device__ __forceinline__ void stm_install(const stm_globals* g, u32 tid, u32 nw, u64 ts) {
	const u32 k = (u32)g->k;
	const u32* wi = (const u32*)g->ws_item + (u64)tid * (u32)g->w_cap; // remote: the rows, read through L2
	const u64* wv = (const u64*)g->ws_val + (u64)tid * (u32)g->w_cap;
	const stm_set_row items = stm_ws_items(g, tid); // the client's own (remote: not used)
	u64* vers = (u64*)g->vers;
	u64* vals = (u64*)g->vals;
	u32* head = (u32*)g->head;
	// A client's write set of up to STM_INSTALL_REG items keeps its items
	// and their new slots in registers between the two passes, the heads
	// loaded together: one round trip for them, where each pass loaded
	// each head after the previous item's store (no one else moves them:
	// the lane is each item's only writer).
	const bool reg = !remote && nw <= STM_INSTALL_REG;
	u32 its[STM_INSTALL_REG], slot[STM_INSTALL_REG];
	if (reg) {
#pragma unroll
		for (u32 j = 0; j < STM_INSTALL_REG; j++) { // every head's load in flight before the first store
			if (j >= nw) break;
			its[j] = items[j];
			slot[j] = ld_relaxed_gpu(head + its[j]);
		}
#pragma unroll
		for (u32 j = 0; j < STM_INSTALL_REG; j++) {
			if (j >= nw) break;
			slot[j] = slot[j] + 1 == k ? 0 : slot[j] + 1;
			st_relaxed_gpu(vers + (u64)its[j] * k + slot[j], STM_NO_VERSION);
		}
	} else {
		for (u32 j = 0; j < nw; j++) {
			const u32 it = remote ? __ldcg((const unsigned int*)wi + j) : items[j];
			const u32 h = ld_relaxed_gpu(head + it);
			st_relaxed_gpu(vers + (u64)it * k + (h + 1 == k ? 0 : h + 1), STM_NO_VERSION);
		}
	}
	__threadfence();
	if (reg) {
#pragma unroll
		for (u32 j = 0; j < STM_INSTALL_REG; j++) {
			if (j >= nw) break;
			st_relaxed_gpu(vals + (u64)its[j] * k + slot[j], stm_ws_value(g, tid, j));
			st_relaxed_gpu(vers + (u64)its[j] * k + slot[j], ts);
			st_relaxed_gpu(head + its[j], slot[j]);
		}
	} else {
		for (u32 j = 0; j < nw; j++) {
			const u32 it = remote ? __ldcg((const unsigned int*)wi + j) : items[j];
			const u32 h = ld_relaxed_gpu(head + it);
			const u32 s = h + 1 == k ? 0 : h + 1;
			st_relaxed_gpu(vals + (u64)it * k + s, remote ? __ldcg((const unsigned long long*)wv + j) : stm_ws_value(g, tid, j));
			st_relaxed_gpu(vers + (u64)it * k + s, ts);
			st_relaxed_gpu(head + it, s);
		}
	}
	__threadfence();
	__syncwarp();
}

// stm_install_all writes this lane's versions (ts, its writes; none when
// ts is 0) through stm_install. All lanes call it.
__device__ void stm_install_all(const stm_globals* g, const stm_tx* tx, u64 ts) {
	stm_install<false>(g, tx->tid, ts ? tx->nw : 0, ts);
}

// stm_set_done marks timestamp ts (not 0) done after its write-back:
// done[ts % R] = ts, a relaxed store that the last fence of the lane's
// stm_install (its every caller's previous step, in every lane, even
// when it installs nothing) makes a release: the fence, then the store.
// A release store fences again, waiting for the lock words' release
// stores made since: the relaxed store measured 0.5-1.2% more commits a
// second under Zipf 0.99 and 0.4-1.8% uniform (H200, 64K accounts,
// 2026-12-01). Every timestamp taken is marked once: by the
// client lane that holds it (stm_mark_done), or by the server's worker
// that answers its request (serve.cu, stm_post_install). The lane calls
// it alone.
__device__ __forceinline__ void stm_set_done(const stm_globals* g, u64 ts) {
	st_relaxed_gpu((u64*)g->done + (ts & g->done_mask), ts);
}

// stm_mark_done marks this lane's timestamp ts done after its write-back
// (0: none; a lane whose transaction failed its final validation after
// taking one holds it as a hole, which installs nothing) with
// stm_set_done. Every timestamp taken is held by exactly one client
// lane, which marks it. Returns the largest timestamp the warp marked
// (warp-uniform; 0 if none). All lanes call it after stm_install_all.
__device__ u64 stm_mark_done(const stm_globals* g, u64 ts) {
	if (ts) stm_set_done(g, ts);
	return warp_max64(ts);
}

// STM_ADVANCE_LOADS is the done markers each lane of stm_advance reads at
// a time: the warp looks at 32 times as many timestamps per round trip.
// When all of them are done it reads STM_ADVANCE_MORE a lane more, in
// flight together, before it moves the clock.
#define STM_ADVANCE_LOADS 4
#define STM_ADVANCE_MORE 12

// stm_advance_scan returns how many timestamps from c + 1 on are done in
// order, up to 32 x n: lane i reads the markers of c + 1 + i, c + 33 + i,
// ... (n loads in flight) and a ballot finds the first not done. All
// lanes call it.
template <u32 n>
__device__ __forceinline__ u64 stm_advance_scan(const u64* done, u64 mask, u64 c, u32 lane) {
	bool ok[n];
#pragma unroll
	for (u32 k = 0; k < n; k++) {
		const u64 t = c + 1 + k * 32 + lane;
		ok[k] = ld_relaxed_gpu(done + (t & mask)) == t;
	}
	u64 d = 0;
#pragma unroll
	for (u32 k = 0; k < n; k++) {
		const u32 b = __ballot_sync(FULL_MASK, ok[k]);
		if (b != FULL_MASK) return d + __ffs(~b) - 1;
		d += 32;
	}
	return d;
}

// stm_advance moves the commit clock over every timestamp that is done in
// order, starting from the clock it reads, and returns the clock it last
// saw, in every lane. Timestamp t is done when done[t % R] == t (a stale
// marker holds an older timestamp: at most R/2 are taken and not yet
// published). A step reads the markers after the clock (stm_advance_scan:
// one round trip to L2 for 128 timestamps, where a chain of one marker per
// batch took one per batch), and when every one it read is done, the next
// 384 (one more round trip; under many commits a step then moves the
// clock by up to 512: with 128 a step, which costs
// three fences and a compare-and-swap, the clock fell behind, and client
// warps waited 24.6 µs of a 39.3 µs round for it at 0% read-only of 64K
// uniform accounts, H200, 2026-11-30; reading 512 every step measured
// 1.62x the commits there but cost 1-5% where the clock keeps up). The
// markers are read, then a fence in every lane, a warp barrier and a
// fence in lane 0, which then moves the clock by compare-and-swap: the
// write-back of every timestamp passed happens before any reader acquires
// the new clock. All lanes call it.
__device__ u64 stm_advance(const stm_globals* g, u32 lane) {
	u64* clock = (u64*)g->clock;
	const u64* done = (const u64*)g->done;
	u64 c = 0;
	if (lane == 0) c = ld_relaxed_gpu(clock);
	c = __shfl_sync(FULL_MASK, c, 0);
	for (;;) {
		u64 d = c + stm_advance_scan<STM_ADVANCE_LOADS>(done, g->done_mask, c, lane);
		if (d == c + 32 * STM_ADVANCE_LOADS) d += stm_advance_scan<STM_ADVANCE_MORE>(done, g->done_mask, d, lane);
		if (d == c) return c;
		__threadfence(); // every lane's markers, then the barrier, then lane 0's fence and swap
		__syncwarp();
		u64 old = 0;
		if (lane == 0) {
			__threadfence();
			old = atomicCAS((unsigned long long*)clock, (unsigned long long)c, (unsigned long long)d);
		}
		old = __shfl_sync(FULL_MASK, old, 0);
		c = old == c ? d : old;
	}
}

// stm_publish waits (all lanes) until the clock has reached top (warp-
// uniform; 0: nothing to wait for), advancing it over done timestamps
// meanwhile. false: the run failed.
__device__ bool stm_publish(const stm_globals* g, u64 top, u32 lane, u64 deadline) {
	if (!top) return true;
	u32 n = 0, ns = 32;
	__threadfence(); // the markers before the clock is read (store-buffering with other markers)
	while (stm_advance(g, lane) < top) {
		const bool quit = lane == 0 && stm_wait_check(g, deadline, &n, STM_AT_CLOCK);
		if (__shfl_sync(FULL_MASK, quit, 0)) return false;
		stm_backoff(&ns, 1024);
	}
	return true;
}

#include "stm/commit.cu"

// stm_record appends this lane's attempt to the history: kind 0 update
// commit, 1 read-only commit (both to the committed region, sized for
// every ticket of the run, so it cannot fill), 2 aborted attempt (cause in
// bits 8..15) to the aborted region, which stops taking records when full
// (counted in CNT_HIST_DROPPED; hist_ab_end is the end of the records it
// holds). A record: kind, (reads << 32 | writes), the timestamp, the
// snapshot, and the (item, value) pairs of the reads and the writes. Each
// region's marks get the bit of the record's first word (one atomic OR), so
// that the host finds where records start without reading them in order.
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
		atomicOr((unsigned long long*)g->hist_ab_marks + (off >> 6), 1ull << (off & 63));
		h = (u64*)g->hist_ab + off;
	} else {
		const u64 off = atomicAdd((unsigned long long*)g->hist_off, (unsigned long long)words);
		if (off + words > g->hist_cap) { // the run's ticket bound makes this impossible
			stm_error(g, STM_ERR_HISTORY, g->hist_cap, tx->ticket);
			return;
		}
		atomicOr((unsigned long long*)g->hist_marks + (off >> 6), 1ull << (off & 63));
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

// stm_count_abort counts tx's aborted attempt (state STM_ST_ABORT +
// cause) in cnt, with where a read-write or write-write conflict was found
// (its detail: the in-warp check, a held lock; a snapshot too old's detail
// is its item), and records it in the history's aborted region when the
// run records aborted attempts (not an attempt a server's re-run took
// over, STM_RETRY). The lane calls it alone.
__device__ __forceinline__ void stm_count_abort(const stm_globals* g, const stm_tx* tx, u64* cnt) {
	const u32 cause = tx->state - STM_ST_ABORT;
	cnt[CNT_ABORT0 + cause]++;
	if (cause == STM_READ_WRITE || cause == STM_WRITE_WRITE) {
		if (tx->detail == STM_AB_IN_WARP) cnt[CNT_IN_WARP]++;
		if (tx->detail == STM_AB_LOCK_MET) cnt[CNT_LOCK_MET]++;
	}
#if STM_RETRY
	if (tx->lost) return;
#endif
	if (g->hist_mode == 2) stm_record(g, tx, 2, cause, tx->snap);
}

// stm_attempt starts a new attempt of tx's ticket: a fresh draw of its
// numbers (the same as the ticket's first attempt), no snapshot, empty
// read and write sets, no partitions.
__device__ __forceinline__ void stm_attempt(stm_tx* tx) {
	tx->snap = 0;
	tx->rng = stm_seed(tx->g->seed, tx->ticket);
	tx->pmask = 0;
	tx->nr = tx->nw = 0;
	tx->ro = 0;
	tx->begun = 0;
	tx->state = STM_ST_OK;
	tx->detail = 0;
	tx->bad = 0;
	tx->calls = 0;
	tx->chain = 0;
}

// stm_tx_start sets tx up for client thread tid's ticket (the run's
// deadline; the claims it holds and the attempts held back in a row, kept
// over its retries) and starts its first attempt (stm_attempt). The
// client's loop and a server's re-run (serve.cu, stm_rerun) call it.
__device__ __forceinline__ void stm_tx_start(stm_tx* tx, const stm_globals* g, u64 ticket, u32 tid, u64 deadline, u32 held, u32 defers) {
	tx->g = g;
	tx->ticket = ticket;
	tx->tid = tid;
	tx->thread = tid;
	tx->threads = (u32)g->threads;
	tx->deadline = deadline;
	tx->held = held;
	tx->keep = 0;
	tx->defers = defers;
	tx->need = 0;
	tx->holder = 0;
	tx->cwn = 0;
#if STM_RETRY
	tx->lost = 0;
#endif
	stm_attempt(tx);
}

#include "stm/chain.cu"

// stm_run_body runs the workload's body for tx's attempt, adds its cycles
// to cnt, and ends the run with the body's error, if any. Inlined at its
// one call site, so that tx stays in registers.
__device__ __forceinline__ void stm_run_body(const stm_globals* g, stm_tx* tx, u64* cnt) {
	const u64 c0 = clock64();
	stm_body(tx);
	if (!tx->begun) stm_fail(tx, STM_ERR_NO_BEGIN, 0);
	cnt[CNT_CY_EXECUTE] += clock64() - c0;
	if (tx->state == STM_ERR_DEADLINE)
		stm_error(g, STM_ERR_DEADLINE, STM_AT_RUN, tx->ticket);
	else if (tx->state >= STM_ERR_ITEM)
		stm_error(g, tx->state, tx->ticket, tx->detail);
}

// stm_stale is one step of the in-place retries of stale update attempts
// (Options.Refresh; g->refresh steps a round at most), between the warp's
// bodies and its commit: the read-only lanes' long bodies age the update
// lanes' snapshots, and under hot items most such attempts are doomed.
// Every update lane reads the newest logged write (wts) of every item it
// read or wrote (stm_newest_writes); one newer than its snapshot is a
// conflict every server's first validation would find, so the attempt
// aborts here: it is counted with the cause the server would give and in
// CNT_REFRESHED, recorded as an aborted attempt, and *stale is
// incremented. The warp then waits until the clock passes the newest
// such write (stm_publish: every timestamp taken is held by a lane in its
// commit or in a chained attempt's pass, never by one here, and neither
// waits for the clock, so the wait ends), and the stale lanes start
// new attempts (stm_attempt; *rerun set), whose bodies the caller runs
// from new snapshots. Returns (warp-uniform) whether any lane did; *quit
// is set when the run failed. All lanes call it.
__device__ __forceinline__ bool stm_stale(const stm_globals* g, stm_tx* tx, bool have, u32 lane, u64 deadline, u64* cnt,
					  u32* stale, bool* rerun, bool* quit) {
	const bool upd = have && tx->state == STM_ST_OK && !tx->ro && tx->nw > 0;
	if (!__any_sync(FULL_MASK, upd)) return false;
	bool rw = false, ww = false;
	u64 top = 0;
	if (upd) top = stm_newest_writes(g, tx, &rw, &ww);
	const bool again = rw || ww;
	if (!__any_sync(FULL_MASK, again)) return false;
	if (again) {
		const u32 cause = rw ? STM_READ_WRITE : STM_WRITE_WRITE;
		cnt[CNT_ABORT0 + cause]++;
		cnt[CNT_REFRESHED]++;
		if (g->hist_mode == 2) stm_record(g, tx, 2, cause, tx->snap);
		*stale += 1;
	}
	if (!stm_publish(g, warp_max64(again ? top : 0), lane, deadline)) {
		*quit = true;
		return false;
	}
	if (again) stm_attempt(tx);
	*rerun = again;
	return true;
}

// stm_throttle reports a warp round's attempts (aborts of them aborted;
// lane 0 calls it) to the control window and, when that report fills the
// window, moves the number of admitted warps: a quarter fewer (at least
// one warp, or client_warps/256) when the window's abort rate was above
// throttle+100 thousandths, client_warps/32 more (at least one) when it
// was below throttle-100. Invariant: only the warp whose exchange takes a
// full window steps, so at most one step per window; reports that land
// between the filling add and the exchange are dropped (a sample lost,
// never a step repeated). One atomic add per round; the stepping warp adds
// an exchange and a store.
__device__ void stm_throttle(const stm_globals* g, u32 attempts, u32 aborts) {
	if (!attempts) return;
	u64* dctl = stm_dctl(g);
	const u64 cw = g->client_warps;
	const u64 shed = ld_relaxed_gpu(&dctl[DCTL_SHED]);
	const u64 admitted = cw - shed;
	const u64 window = max(1024ull, admitted * 64);
	const u64 add = (u64)attempts | ((u64)aborts << 32);
	const u64 now = atomicAdd((unsigned long long*)&dctl[DCTL_WINDOW], (unsigned long long)add) + add;
	if ((now & 0xFFFFFFFFull) < window) return;
	const u64 w = atomicExch((unsigned long long*)&dctl[DCTL_WINDOW], 0ull);
	const u64 att = w & 0xFFFFFFFFull, ab = w >> 32;
	if (att < window) return;
	const u64 rate = ab * 1000 / att;
	u64 next = admitted;
	if (rate > g->throttle + 100) {
		next = max(max(1ull, cw / 256), admitted - admitted / 4);
	} else if (rate + 100 < g->throttle) {
		next = min(cw, admitted + max(1ull, cw / 32));
	}
	if (next != admitted) st_relaxed_gpu(&dctl[DCTL_SHED], cw - next);
	atomicAdd((unsigned long long*)&dctl[DCTL_STEPS], 1ull);
	atomicAdd((unsigned long long*)&dctl[DCTL_ADMITTED_SUM], (unsigned long long)next);
}

// stm_lat_bucket returns the bucket of a commit latency of ns nanoseconds
// in Go's Latency layout (stm/latency.go): for ns >= 8, 8 buckets per
// power of two, bucket e*8 + the three bits below the top bit e; 1 to 7 ns
// a bucket each, 0 counts as 1. Durations of 2^40 ns and more (18 minutes)
// count in the last of the STM_LAT_BUCKETS buckets.
__device__ __forceinline__ u32 stm_lat_bucket(u64 ns) {
	ns = ns ? ns : 1;
	const u32 e = 63 - __clzll((long long)ns);
	if (e < 3) return (u32)ns;
	const u32 b = e * 8 + (u32)((ns >> (e - 3)) & 7);
	return b < STM_LAT_BUCKETS ? b : STM_LAT_BUCKETS - 1;
}

// stm_lat_record counts the commit latencies of a warp's round in the
// block's shared histogram lat: lane i, when committed, the time from its
// ticket's first attempt (began, the global timer when a warp first took
// the ticket, kept when it migrates) to now (the global timer after the round's publication, one
// read by lane 0). Lanes of one bucket are counted together
// (__match_any_sync: one shared-memory atomic add per distinct bucket of
// the round, no global atomic), and each committed lane adds its latency
// to its own sum (*sum, a register). Warp-uniform: all lanes call it; a
// round without commits reads no timer.
__device__ __forceinline__ void stm_lat_record(u32* lat, bool committed, u64 began, u32 lane, u64* sum) {
	if (!__any_sync(FULL_MASK, committed)) return;
	u64 now = 0;
	if (lane == 0) now = globaltimer_ns();
	now = __shfl_sync(FULL_MASK, now, 0);
	const u64 d = now > began ? now - began : 0;
	const u32 b = committed ? stm_lat_bucket(d) : STM_LAT_BUCKETS;
	const u32 same = __match_any_sync(FULL_MASK, b);
	if (committed) {
		*sum += d;
		if (lane == (u32)(__ffs(same) - 1)) atomicAdd(lat + b, (u32)__popc(same));
	}
}

#include "stm/inbox.cu"

// stm_client: thread mapping: one transaction slot per thread (tid), warps
// commit together. Commit latencies (compiled in with STM_LATENCY, for
// runs of RunOptions.Latency only; without it the kernel's code is the
// code without them): each lane keeps the global timer of its ticket's
// first attempt; the block counts its committed transactions' latencies
// in one shared-memory histogram (STM_LAT_BUCKETS 32-bit counters,
// stm_lat_record), which its threads add to the run's (64-bit, the
// STM_LAT_BUCKETS words after the counters, then the latencies' sum, to
// which each thread adds its own) once, after every warp of the block has
// left the loop (a block barrier, which every warp reaches: the loop's
// exits are warp-uniform). Invariant: a lane holds a ticket until its
// transaction commits or is given up, or (STM_MIGRATE) moves it to
// another warp's inbox; the warp leaves the loop only when no lane holds
// one, no more tickets are to be had and its inbox is closed empty (or the
// run failed or was stopped).
// Tickets stop at n_tx, so a run commits at most n_tx transactions.
extern "C" __global__ void __launch_bounds__(STM_CLIENT_BLOCK) stm_client(const stm_globals* __restrict__ gp) {
	__shared__ stm_globals sg;
#if STM_LATENCY
	__shared__ u32 lat[STM_LAT_BUCKETS];
	for (u32 i = threadIdx.x; i < STM_LAT_BUCKETS; i += blockDim.x) lat[i] = 0;
#endif
	stm_copy_globals(&sg, gp); // its barrier also orders the zeroing
	const stm_globals* g = &sg;
	const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
	const u32 lane = threadIdx.x & 31;
	const u32 wid = tid >> 5;
	const u64 deadline = globaltimer_ns() + g->limit_ns;
	u64* dctl = stm_dctl(g);
	u64 cnt[CNT_WORDS];
	for (int i = 0; i < CNT_WORDS; i++) cnt[i] = 0;
	u64 cy[11] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; // [6..10]: lane 0's round phases (stm_commit_direct)
	bool have = false, done = false;
	u64 ticket = 0;
	u64 began = 0; // the global timer when this lane's ticket was first taken (STM_LATENCY; else 0)
#if STM_LATENCY
	u64 lat_ns = 0; // this lane's commits' latencies summed
#endif
	u32 seq = 0;
	u32 held = 0, defers = 0; // contention management: claim slots held, attempts held back in a row
	u32 bounces = 0;          // direct commits: aborted attempts in a row (each released its locks)
	u64 round0 = 0;           // lane 0: the clock at the start of the warp's round (0: none running)
#if STM_MIGRATE
	u32 thread = tid;     // the thread of the lane's ticket (a migrated ticket keeps its first lane's)
	bool stopped = false; // (warp-uniform) the run was told to stop
#endif
	for (;;) {
		if (lane == 0) { // the round that ends here, counted
			const u64 now = clock64();
			if (round0) {
				cnt[CNT_ROUNDS]++;
				cnt[CNT_CY_ROUND] += now - round0;
			}
			round0 = now;
		}
		// Lane 0 loads the error word, the stop flag and the admission
		// words together (one round trip to L2 a round, where each was
		// loaded after the previous one's answer).
		u32 flags = 0;
		if (lane == 0) {
			const u64 err = ld_relaxed_gpu(&dctl[DCTL_ERROR]), stop = ld_relaxed_gpu(&dctl[DCTL_STOP]);
			const u64 shed = g->throttle ? ld_relaxed_gpu(&dctl[DCTL_SHED]) : 0;
			const u64 out = g->throttle ? ld_relaxed_gpu(&dctl[DCTL_TICKETS_OUT]) : 0;
			if (err)
				flags = 1;
			else if (globaltimer_ns() > deadline) {
				stm_error(g, STM_ERR_DEADLINE, STM_AT_RUN, 0);
				flags = 1;
			} else if (stop)
				flags = 2;
			// Admission control (Options.Throttle): the warps numbered
			// below client_warps - DCTL_SHED are admitted; every warp is
			// once every ticket is taken (a run of n_tx transactions then
			// finishes the tickets that parked warps hold).
			if (g->throttle && wid + shed >= g->client_warps && !out) flags |= 4;
		}
		flags = __shfl_sync(FULL_MASK, flags, 0);
		const bool admitted = !(flags & 4);
		flags &= 3;
		if (flags == 1) break;
		if (flags == 2) {
			have = false; // abandon attempts in progress
			done = true;
#if STM_MIGRATE
			stopped = true; // and the tickets moved to this warp
#endif
		}
		// A warp not admitted sleeps between its checks of
		// the stop flag, the deadline and its admission, holding the
		// tickets of attempts that aborted: they run again, with new
		// snapshots, once it is admitted.
		if (!__all_sync(FULL_MASK, done) && !admitted) {
			if (held) stm_unclaim<false>(g, tid, held); // claims kept over an abort: not while asleep
			held = 0;
			round0 = 0; // asleep: not a round
			__nanosleep(4000);
			continue;
		}
#if STM_MIGRATE
		if (stm_inbox_pull(g, wid, !have && !stopped, lane, &ticket, &began, &thread)) have = true; // tickets moved here first
#endif
		const u32 need = __ballot_sync(FULL_MASK, !have && !done);
		if (need) {
			u64 base = 0;
			if (lane == 0) base = atomicAdd((unsigned long long*)&dctl[DCTL_TICKETS], (unsigned long long)__popc(need));
			base = __shfl_sync(FULL_MASK, base, 0);
#if STM_LATENCY
			u64 now = 0;
			if (lane == 0) now = globaltimer_ns();
			now = __shfl_sync(FULL_MASK, now, 0);
			if (!have && !done) began = now;
#endif
			if (!have && !done) {
				ticket = base + __popc(need & lanemask_lt(lane));
#if STM_MIGRATE
				thread = tid;
#endif
				if (g->n_tx && ticket >= g->n_tx)
					done = true;
				else
					have = true;
			}
			if (lane == 0 && g->n_tx && base + __popc(need) > g->n_tx) st_relaxed_gpu(&dctl[DCTL_TICKETS_OUT], 1);
		}
		if (!__any_sync(FULL_MASK, have)) {
#if STM_MIGRATE
			// A warp leaves once its inbox is closed empty: a ticket
			// moved to it after would be lost (a stopped run abandons them).
			if (!stopped && !stm_inbox_close(g, wid, lane)) continue;
#endif
			break;
		}

		stm_tx tx;
		stm_tx_start(&tx, g, ticket, tid, deadline, held, defers);
#if STM_MIGRATE
		tx.thread = thread;
#endif
		bool quit = false;
		u64 pt = 0; // lane 0: the round's phases, timed
		if (lane == 0) {
			pt = clock64();
			if (round0) cnt[CNT_PH_TICKET] += pt - round0;
		}
		// The bodies and the warp's commit; with chained attempts
		// (STM_CHAIN) a second pass runs the chained lanes' bodies and
		// commits them (stm_chain_begin, stm_chain_end). The body has
		// this one call site.
		bool run = have;
		u64 ts = 0, pub = 0; // this lane's commit timestamp; the clock the warp waits for
#if STM_REFRESH
		u32 stale = 0;
#endif
#if STM_CHAIN
		u64 cts = 0;                      // its timestamp
		u32 chains = 0;                   // this lane's chained attempts this round
		bool held_back = false;           // (warp-uniform) whether lanes held back at their locks chain too
#endif
		for (u32 pass = 0;; pass++) {
#if STM_REFRESH
			// The bodies, then up to g->refresh in-place retries of stale
			// update attempts (stm_stale; the first pass only).
			for (u64 r = 0;; r++) {
				if (run) stm_run_body(g, &tx, cnt);
				__syncwarp();
				if (pass || r >= g->refresh || !stm_stale(g, &tx, have, lane, deadline, cnt, &stale, &run, &quit)) break;
			}
			if (__any_sync(FULL_MASK, quit)) break;
#else
			if (run) stm_run_body(g, &tx, cnt);
			__syncwarp();
#endif
#if STM_CHAIN
			if (pass) {
				ts = stm_chain_end(g, &tx, cts, ts, &pub, cnt);
				if (lane == 0) cnt[CNT_PH_CHAIN] += clock64() - pt;
			} else
#endif
			{
				u64 pc = 0;
				if (lane == 0) {
					pc = clock64();
					cnt[CNT_PH_BODY] += pc - pt;
				}
				ts = stm_commit_warp(g, &tx, have, lane, wid, &seq, deadline, cy, &quit, &pub);
				if (__any_sync(FULL_MASK, quit)) break;
#if STM_CHAIN
				// A lane held back at its locks (STM_ST_DEFER) runs again
				// next round, after the warp's next bodies and commit.
				// When this round's bodies took longer than its commit
				// (read-only bodies beside the updates, or long updates),
				// a chained attempt now is the shorter wait; otherwise the
				// chained pass would lengthen the round of every lane for
				// it. (Until 2026-12-01: more than twice its commit. Once
				// measured 1.03x the commits a second at 1-round Zipf 0.99
				// 0% read-only, 1.09x with 2-round transfers at 50%, 0.98x
				// with 2-round transfers at 0-10%: H200, 64K accounts.)
				held_back = __shfl_sync(FULL_MASK, lane == 0 && pc - pt > clock64() - pc, 0);
#endif
			}
#if STM_CHAIN
			// Up to STM_CHAIN passes of chained attempts: a lane whose
			// chained attempt lost, or that did not get its locks (a lane
			// of the last pass held them), may chain in the next.
			if (pass < STM_CHAIN) {
				if (lane == 0) pt = clock64();
				if (stm_chain_begin(g, &tx, have, held_back, lane, cnt, &cts)) {
					chains += cts != 0;
					run = cts != 0;
					continue;
				}
			}
#endif
			break;
		}
		if (__any_sync(FULL_MASK, quit)) break;
		{ // publication (direct commits: stm_commit_direct and the chained attempts leave it here)
			const u64 c2 = clock64();
			if (!stm_publish(g, pub, lane, deadline)) break;
			const u64 c3 = clock64();
			if (STM_DIRECT && ts) cy[3] += c3 - c2;
			if (STM_DIRECT && lane == 0) cy[10] += c3 - c2;
		}
		if (tx.held && !tx.keep) stm_unclaim_kept(g, &tx); // a lane that did not reach stm_contend
		held = tx.held;
		defers = tx.defers;
		const bool aborted = have && tx.state >= STM_ST_ABORT && tx.state < STM_ST_ABORT + 4;
		// A direct commit that aborted released its locks
		// (stm_commit_direct): bounces counts such attempts in a row.
		// (tx.keep, claims kept over an abort, is the servers' path's:
		// stm_contend, which direct programs do not run.)
		const bool bounced = STM_DIRECT && aborted;
		bounces = bounced ? bounces + 1 : (have && tx.state == STM_ST_OK ? 0 : bounces);
		if (g->throttle) {
			// With direct commits an attempt held back by another's lock is
			// contention too: without servers nothing else bounds it.
			const bool lost = aborted || (STM_DIRECT && have && tx.state == STM_ST_DEFER);
			const bool ran = have && (tx.state == STM_ST_OK || lost);
			u32 att = __popc(__ballot_sync(FULL_MASK, ran)), nab = __popc(__ballot_sync(FULL_MASK, lost));
#if STM_CHAIN
			const u32 ch = warp_sum32(chains); // the lost attempts chained, counted
			att += ch;
			nab += ch;
#endif
#if STM_REFRESH
			const u32 st = warp_sum32(stale);
			att += st;
			nab += st;
#endif
			if (lane == 0) stm_throttle(g, att, nab);
		}
#if STM_LATENCY
		stm_lat_record(lat, have && tx.state == STM_ST_OK && (ts || tx.ro || tx.nw == 0), began, lane, &lat_ns);
#endif
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
			} else if (tx.state == STM_ST_DEFER) {
				cnt[CNT_DEFERRED]++; // held back unsent: the ticket runs again
			} else if (tx.state == STM_ST_STOP) {
				have = false; // the run stopped during it: abandoned
				done = true;
			} else if (tx.state >= STM_ST_ABORT && tx.state < STM_ST_ABORT + 4) {
				stm_count_abort(g, &tx, cnt);
			} else {
				have = false; // an error, recorded above: the run ends
			}
			if (tx.state != STM_ST_DEFER && !(tx.state >= STM_ST_ABORT && tx.state < STM_ST_ABORT + 4)) defers = 0;
		}
#if STM_MIGRATE
		// A ticket held back STM_MIGRATE times in a row at a lock another
		// warp's lane holds moves to that warp (stm_inbox_push), and so
		// does one whose attempt lost and whose chained claim then met
		// another warp's lock (tx.holder); this lane takes a fresh one next
		// round.
		const u32 hw = (tx.holder - 1) >> 5; // the holder's warp (when tx.holder is not 0)
		if (have && (tx.state == STM_ST_DEFER ? defers >= STM_MIGRATE : aborted) && !tx.held && tx.holder && hw != wid && hw < g->client_warps &&
		    stm_inbox_push(g, hw, ticket, began, thread)) {
			have = false;
			defers = bounces = 0;
			cnt[CNT_MIGRATED]++;
		}
#endif
		// A warp whose every lane with a ticket was held back, or aborted
		// keeping its claims, waits a little for the holders' commits
		// before it runs them again: with direct commits longer the more
		// often its lanes were held back in a row (a random time in the
		// upper half of a window of 1 µs to 4 µs: up to 32 µs measured
		// 1% fewer commits a second under Zipf 0.99 at 0% read-only, H200,
		// 2026-12-01), so that lanes that keep taking each other's locks
		// spread out. A direct
		// commits' warp whose every lane with a ticket aborted (and so
		// released its locks, stm_commit_direct) sleeps a random time below
		// a window that doubles with its bounces in a row (up to 32 µs): two
		// lanes that each read what the other writes otherwise bounce each
		// other in step for ever (measured: two of the memcached workload's
		// PUTs, about three million times at the end of a run). Only such
		// warps: sleeping whenever every lane lost in any way (deferrals
		// included) halved the commits
		// a second under Zipf 0.99 (H200, 2026-11-30: 3.6M against 7.3M at
		// 0% read-only of 64K accounts).
		{
			const bool waits = have && (tx.state == STM_ST_DEFER || tx.keep);
			if ((STM_DIRECT || g->contention >= 2) && __all_sync(FULL_MASK, waits || !have) && __any_sync(FULL_MASK, waits)) {
				u32 ns = 1000;
#if STM_DIRECT
				// A random time in [ns/2, ns): two warps whose lanes each
				// hold a lock the other's wants otherwise fail their locks
				// and sleep in step for ever (measured: 2-round transfers
				// of a hot block of 16 accounts without the in-place
				// retries, the last tickets held back millions of times).
				ns <<= min(__reduce_max_sync(FULL_MASK, have ? defers : 0), 2u);
				u32 r = 0;
				if (lane == 0) r = ns / 2 + (u32)stm_mix(clock64() ^ ((u64)wid << 40)) % (ns / 2);
				ns = __shfl_sync(FULL_MASK, r, 0);
#endif
				__nanosleep(ns);
			}
#if STM_DIRECT
			if (__all_sync(FULL_MASK, bounced || !have) && __any_sync(FULL_MASK, bounced)) {
				const u32 b = __reduce_max_sync(FULL_MASK, have ? bounces : 0);
				u32 r = 0;
				if (lane == 0) r = (u32)stm_mix(clock64() ^ ((u64)wid << 40)) % (1000u << min(b, 5u));
				__nanosleep(__shfl_sync(FULL_MASK, r, 0));
			}
#endif
		}
	}
	cnt[CNT_CY_PREVALIDATE] += cy[0];
	cnt[CNT_CY_ROUNDTRIP] += cy[1];
	cnt[CNT_CY_WRITEBACK] += cy[2];
	cnt[CNT_CY_PUBLISH] += cy[3];
#if STM_DIRECT
	cnt[CNT_CY_VALIDATE] += cy[4]; // stm_commit_direct's validation (no server validates)
#else
	cnt[CNT_NS_CLIENT] += cy[4];
#endif
	cnt[CNT_CLIENT_REPLIES] += cy[5];
	cnt[CNT_PH_CHECK] += cy[6];
	cnt[CNT_PH_LOCK] += cy[7];
	cnt[CNT_PH_VALIDATE] += cy[8];
	cnt[CNT_PH_WRITEBACK] += cy[9];
	cnt[CNT_PH_PUBLISH] += cy[10];
	u64* counters = (u64*)g->counters;
	for (int i = 0; i < CNT_WORDS; i++)
		if (cnt[i]) atomicAdd((unsigned long long*)&counters[i], (unsigned long long)cnt[i]);
#if STM_LATENCY
	__syncthreads(); // every warp of the block has counted its commits
	u64* glat = (u64*)g->counters + CNT_WORDS;
	for (u32 i = threadIdx.x; i < STM_LAT_BUCKETS; i += blockDim.x)
		if (lat[i]) atomicAdd((unsigned long long*)&glat[i], (unsigned long long)lat[i]);
	if (lat_ns) atomicAdd((unsigned long long*)&glat[STM_LAT_BUCKETS], (unsigned long long)lat_ns);
#endif
	__syncwarp();
	if (lane == 0) {
		__threadfence();
		atomicAdd((unsigned long long*)&dctl[DCTL_CLIENTS_DONE], 1ull);
	}
}
