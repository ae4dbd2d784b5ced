// handoff.cu: kernels that measure how fast one word of global memory can
// pass between threads on different SMs (launched by handoff_gpu.go; the
// CPU twin is handoff.go). Any protocol in which each step must see the
// step before it, such as the commits of one hot item of a transactional
// memory, runs no faster than these handoffs.
//
// Every kernel works on a state of HANDOFF_WORDS u64 words that the host
// zeroes before the launch: st[0] the word passed (a turn counter or a
// lock), st[1] the value each step reads and increments under it, st[2]
// the failure flag (1: a thread waited longer than timeout_ns for its
// turn; every waiter then stops), st[3] a sink that keeps returned values
// alive.
#include "warpkv/order.cuh"

#ifndef HANDOFF_WORDS
#error "HANDOFF_WORDS must be defined by the Go launcher"
#endif
#ifndef HANDOFF_POLL
#error "HANDOFF_POLL must be defined by the Go launcher"
#endif
static_assert(HANDOFF_WORDS >= 4, "the state holds word, value, failure flag and sink");
static_assert((HANDOFF_POLL & (HANDOFF_POLL - 1)) == 0, "the poll period is a power of two");

// handoff_timed_out is the waiters' slow path, taken once every
// HANDOFF_POLL failed polls: it reports whether this thread should stop
// waiting (another thread failed, or this one has waited past timeout_ns
// since *start, which it sets on its first call; it then fails the run).
__device__ __forceinline__ bool handoff_timed_out(u64* st, u64* start, u64 timeout_ns) {
    if (ld_relaxed_gpu(&st[2]) != 0) return true;
    const u64 now = globaltimer_ns();
    if (*start == 0) {
        *start = now;
    } else if (now - *start > timeout_ns) {
        st_relaxed_gpu(&st[2], (u64)1);
        return true;
    }
    return false;
}

// handoff_pingpong: two threads on two SMs take turns: thread 0 of block
// b (b = 0 or 1) waits until the turn counter st[0] reads 2k+b, reads the
// value st[1] and writes it back plus one, then releases the turn by
// writing 2k+b+1; k runs to rounds. One handoff is one release seen by the
// other side's acquire, the critical path of a hot item passed between
// SMs with its value.
// Thread mapping: a grid of 2 blocks; thread 0 of each works, the others
// return at once.
// Invariant: unless st[2] is set, st[0] and st[1] both end at 2*rounds
// (every increment of st[1] saw the one before: the release/acquire
// pairs order them).
extern "C" __global__ void handoff_pingpong(u64* st, u32 rounds, u64 timeout_ns) {
    if (threadIdx.x != 0 || blockIdx.x > 1) return;
    const u64 side = blockIdx.x;
    for (u32 k = 0; k < rounds; ++k) {
        const u64 want = 2 * (u64)k + side;
        u64 start = 0;
        u32 polls = 0;
        while (ld_acquire_gpu(&st[0]) != want) {
            if ((++polls & (HANDOFF_POLL - 1)) == 0 && handoff_timed_out(st, &start, timeout_ns)) return;
        }
        st_relaxed_gpu(&st[1], ld_relaxed_gpu(&st[1]) + 1);
        st_release_gpu(&st[0], want + 1);
    }
}

// handoff_lock: lane 0 of every warp of the grid takes a spin lock on
// st[0] (compare-and-swap 0 -> 1) per_warp times, each time incrementing
// the value st[1] under it and releasing it (a release store of 0). The
// rate of acquisitions is what a hot item updated under a lock by the
// whole GPU can reach.
// Thread mapping: any grid; lane 0 of each warp works, the other lanes
// return at once.
// Invariant: unless st[2] is set, st[0] ends 0 and st[1] at the number of
// warps times per_warp (mutual exclusion: no increment is lost).
extern "C" __global__ void handoff_lock(u64* st, u32 per_warp, u64 timeout_ns) {
    if ((threadIdx.x & 31) != 0) return;
    for (u32 k = 0; k < per_warp; ++k) {
        u64 start = 0;
        u32 polls = 0;
        while (atomicCAS((unsigned long long*)&st[0], 0ull, 1ull) != 0ull) {
            if ((++polls & (HANDOFF_POLL - 1)) == 0 && handoff_timed_out(st, &start, timeout_ns)) return;
        }
        __threadfence(); // acquire: the value read below is the last holder's
        st_relaxed_gpu(&st[1], ld_relaxed_gpu(&st[1]) + 1);
        st_release_gpu(&st[0], (u64)0);
    }
}

// handoff_atomics: lane 0 of every warp of the grid adds 1 to the value
// st[1] per_warp times with atomicAdd, using each returned value (folded
// into st[3] only if it is impossible, so that the adds return): the rate
// of fetch-and-adds on one address from many SMs, such as a shared
// timestamp counter. One lane a warp, so that the compiler cannot merge a
// warp's adds into one (warp-aggregated atomics).
// Thread mapping: any grid; lane 0 of each warp works, the other lanes
// return at once.
// Invariant: st[1] ends at the number of warps times per_warp.
extern "C" __global__ void handoff_atomics(u64* st, u32 per_warp) {
    if ((threadIdx.x & 31) != 0) return;
    u64 acc = 0;
    for (u32 k = 0; k < per_warp; ++k) {
        acc ^= atomicAdd((unsigned long long*)&st[1], 1ull);
    }
    if (acc == ~0ull) st[3] = acc;
}
