// stm/device.cuh: the device types and helpers shared by CSMV's kernels on
// the GPU. The kernels are split by part: client.cu (stm_client), server.cu
// (stm_server) and store.cu (stm_init, stm_final); stm/engine_gpu.go
// compiles them as one program (one translation unit that includes the
// three) and launches the client and server kernels on two streams.
//
//
// Clients (stm_client): one transaction at a time per thread; a warp runs
// the bodies of its 32 transactions, then commits them together:
// pre-validation inside the warp (Algorithm 1 of the thesis), one request
// per server whose partition the survivors touch, write-back of the
// versions, and publication in commit order.
//
// Servers (stm_server): one block per partition of the items, resident on
// an SM of its own: warp 0 is the receiver (finalize messages, the end of
// the run), the others are workers. The log of recent commits (timestamps
// and written items of this partition) lives in shared memory. A worker
// takes one request (the transactions of one client warp) from the
// partition's request ring itself (stm_take: a shared-memory atomic claims
// the next slot, the worker polls it until the client has posted it) and
// validates it as a batch whatever the transactions' sizes: the
// request's accesses (lane 0's reads and writes, then lane 1's, ...) go
// STM_TABLE/2 at a time into a hash table in shared memory (item -> the
// lanes that read or wrote it), the whole warp loading them (one round
// trip to L2) and then each accessed item's newest logged write (wts, one
// word per item in global memory, raised by every live log entry before
// its publication: one more round trip), which conflicts when it is newer
// than its transaction's snapshot (one load for 32 transfers of one round;
// a request of larger transactions takes several, and a transaction larger
// than the table is spread over several loads). This first validation
// costs the request's accesses, not the commits since its snapshots, and
// covers every entry published before the head it read first. There is no lock: the survivors
// reserve consecutive slots of the log with one atomicAdd, and requests
// take their turns in slot order (log.cuh): in its turn a single-partition
// request takes consecutive timestamps for its survivors (in shared memory
// when there is one server, else one addition on the global counter),
// writes their entries (the items staged in shared memory when each
// writes at most STM_SPL, else copied from the write sets by the whole
// warp) and passes the turn on; only then does it validate
// them against the log entries published since its first validation (those of the
// earlier slots), so that no scan happens in a turn. A survivor that fails
// this final validation aborts with its timestamp, a hole its client marks
// done, and its entry stays (a phantom: others may abort for it, none
// commits wrongly). A transaction that touches several partitions
// prepares at each of its servers in ascending order: the prepare
// validates in its turn and keeps the turn for the client; the client
// reserves one timestamp range and finalizes at every prepared server (the
// receiver writes the survivors' entries from their write sets, and null
// entries in the other slots, which passes the turn on, then answers; the
// warp starts no new transaction, which would overwrite those write sets,
// before every prepared server answered). Every log therefore lists its
// commits in timestamp order, and a transaction is validated against all
// commits between its snapshot and its timestamp that touched its items.
// Clients wait on their own reply word, each answered when its request is
// done.
//
// Publication: every timestamp taken is held by one client lane, which
// writes its transaction's versions back (a hole installs nothing) and
// then marks the timestamp done in a ring of markers (done[ts % R] = ts);
// a warp then advances the commit clock over every timestamp that is done
// in order (its lanes read 128 markers at a time; a compare-and-swap from
// the clock it read); nobody waits for an earlier batch to publish. A warp
// waits for the clock to pass its own timestamps before it starts new
// transactions, which bounds the timestamps reserved but not published by
// the client threads (R is at least twice that).
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
// constants of stm/layout_gpu.go (STM_TABLE, STM_SPL among them).
#pragma once
#include "warpkv/types.cuh"
#include "stm/globals.cuh"
#include "stm/stm.cuh"

#define STM_WORKERS (STM_SERVER_WARPS - 1)
#define REQ_SINGLE 1u
#define REQ_PREPARE 2u
#define STM_EMPTY 0xFFFFFFFFu

// A commit request of one client warp at one server; ready when seq equals
// its ring position + 1.
struct stm_req {
	u64 seq;
	u32 warp, mask, kind, cseq; // cseq: the warp's request number, echoed in its reply
	u64 sent;                   // the GPU's global timer (ns) when the client began sending the round (stage counters)
};
// A finalize message: log the transactions of mask (lanes of warp) with
// timestamps t0 + their rank in all, in the slots their prepare reserved,
// which passes the log's turn on.
struct stm_fin {
	u64 seq;
	u64 t0;
	u32 warp, mask, all, cseq; // cseq: echoed in the reply once the receiver logged them
};
static_assert(sizeof(stm_req) == 8 * STM_REQ_WORDS && sizeof(stm_fin) == 8 * STM_FIN_WORDS,
              "a ring slot's size differs from the one stm/memory_gpu.go allocates");

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
__device__ __forceinline__ u32 warp_sum32(u32 v) { return __reduce_add_sync(FULL_MASK, v); }
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
// warp_incl_sum32 returns the sum of v over lanes 0 to lane (an inclusive
// prefix sum across the warp, five shuffles). All lanes call it.
__device__ __forceinline__ u32 warp_incl_sum32(u32 v, u32 lane) {
	for (int o = 1; o < 32; o <<= 1) {
		const u32 x = __shfl_up_sync(FULL_MASK, v, o);
		if (lane >= (u32)o) v += x;
	}
	return v;
}

// stm_wts_note raises item's wts (the timestamp of its newest logged or
// installed write) to ts: one relaxed atomicMax in L2, not waited for
// (a server's entries of a group are written in parallel, not in
// timestamp order; a direct commit holds the item's lock).
__device__ __forceinline__ void stm_wts_note(const stm_globals* g, u32 item, u64 ts) {
	atomicMax((unsigned long long*)g->wts + item, (unsigned long long)ts);
}

// stm_wts_read returns item's wts (a relaxed load at GPU scope, from L2:
// the atomics bypass the SM's L1).
__device__ __forceinline__ u64 stm_wts_read(const stm_globals* g, u32 item) { return ld_relaxed_gpu((const u64*)g->wts + item); }

// Bloom, signature and table hashes of an item.
__device__ __forceinline__ u32 stm_hash10(u32 item) { return (item * 0x9E3779B1u) >> 22; }
__device__ __forceinline__ u32 stm_hash6(u32 item) { return (item * 0x9E3779B1u) >> 26; }
