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
//   globaltimer_ns()                            nanoseconds of the GPU's
//                                               global timer (the same on
//                                               every SM).
// A relaxed access is a single-copy atomic access without ordering (unlike
// a plain one, the compiler neither splits, merges nor caches it); order
// with fences or acquire/release accesses.
#pragma once

#include "warpkv/types.cuh"

// Each ordering, scope and width is its own one-line asm, on purpose: the
// operand constraints differ by width ("r" u32, "l" u64) and a macro that
// generated them would hide the one instruction each function is.

// ---- GPU scope ----

__device__ __forceinline__ u64 ld_relaxed_gpu(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u32 ld_relaxed_gpu(const u32* p) {
    u32 v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 ld_acquire_gpu(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u32 ld_acquire_gpu(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed_gpu(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed_gpu(u32* p, u32 v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_release_gpu(u64* p, u64 v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_release_gpu(u32* p, u32 v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---- system scope (mapped host memory) ----

__device__ __forceinline__ u64 ld_relaxed_sys(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 ld_acquire_sys(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed_sys(u64* p, u64 v) {
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_release_sys(u64* p, u64 v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// globaltimer_ns returns the GPU's global timer in nanoseconds.
__device__ __forceinline__ u64 globaltimer_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
