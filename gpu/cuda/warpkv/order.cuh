// warpkv/order.cuh: loads and stores of global memory with the orderings
// of the PTX memory model, for kernels that communicate with other threads
// while they run (stm's clients and servers, hashindex's resident search
// and the host), and the GPU's global timer.
//
// Interface (all __device__; overloaded for u32 and u64; p in the global
// state space):
//   ld_relaxed_gpu(p), ld_acquire_gpu(p)       loads at GPU scope: ordered
//                                               with every thread of the
//                                               device (acquire: the loads
//                                               after it see what the
//                                               releasing writer wrote
//                                               before its release);
//   st_relaxed_gpu(p, v), st_release_gpu(p, v) stores at GPU scope;
//   ld_relaxed_sys(p), ld_acquire_sys(p),
//   st_relaxed_sys(p, v), st_release_sys(p, v) u64 at system scope: for
//                                               host memory mapped into the
//                                               device (the host is the
//                                               other party);
//   fence_acq_rel_gpu()                         a fence at GPU scope: with a
//                                               relaxed load before it, an
//                                               acquire (the accesses after
//                                               it see what the writer of
//                                               the value loaded wrote
//                                               before its release);
//   globaltimer_ns()                            nanoseconds of the GPU's
//                                               global timer (the same on
//                                               every SM).
// A relaxed access is a single-copy atomic access without ordering (unlike
// a plain one, the compiler neither splits, merges nor caches it); order
// with fences or acquire/release accesses.
#pragma once

#include "warpkv/types.cuh"

// WARPKV_ORDERED(SCOPE, T, C) defines the four accesses of one scope and
// width: ld_relaxed_SCOPE, ld_acquire_SCOPE, st_relaxed_SCOPE and
// st_release_SCOPE on T (u32 or u64, which is also the PTX type), C the
// operand constraint of T ("r" u32, "l" u64). Each is still one inline asm
// instruction, e.g. ld_acquire_gpu(const u64*) is
// "ld.acquire.gpu.global.u64 %0, [%1];"; only the spelling is generated.
#define WARPKV_ORDERED(SCOPE, T, C)                                                             \
    __device__ __forceinline__ T ld_relaxed_##SCOPE(const T* p) {                               \
        T v;                                                                                    \
        asm volatile("ld.relaxed." #SCOPE ".global." #T " %0, [%1];" : "=" C(v) : "l"(p) : "memory"); \
        return v;                                                                               \
    }                                                                                           \
    __device__ __forceinline__ T ld_acquire_##SCOPE(const T* p) {                               \
        T v;                                                                                    \
        asm volatile("ld.acquire." #SCOPE ".global." #T " %0, [%1];" : "=" C(v) : "l"(p) : "memory"); \
        return v;                                                                               \
    }                                                                                           \
    __device__ __forceinline__ void st_relaxed_##SCOPE(T* p, T v) {                             \
        asm volatile("st.relaxed." #SCOPE ".global." #T " [%0], %1;" ::"l"(p), C(v) : "memory");   \
    }                                                                                           \
    __device__ __forceinline__ void st_release_##SCOPE(T* p, T v) {                             \
        asm volatile("st.release." #SCOPE ".global." #T " [%0], %1;" ::"l"(p), C(v) : "memory");   \
    }

// ---- GPU scope ----
WARPKV_ORDERED(gpu, u64, "l")
WARPKV_ORDERED(gpu, u32, "r")

// ---- system scope (mapped host memory) ----
WARPKV_ORDERED(sys, u64, "l")

#undef WARPKV_ORDERED

// fence_acq_rel_gpu orders this thread's accesses before it with those after
// it at GPU scope ("fence.acq_rel.gpu"): after relaxed loads it makes them
// acquires, one fence for all of them, where each acquiring load waits for
// its own round trip before the next access issues.
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// globaltimer_ns returns the GPU's global timer in nanoseconds.
__device__ __forceinline__ u64 globaltimer_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
