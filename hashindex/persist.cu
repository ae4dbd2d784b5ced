// persist.cu: a resident search kernel for the Mega-KV index. It stays on
// the device between batches and polls a doorbell in mapped host memory,
// so that a small search batch costs no kernel launch, no copy and no
// driver call: the host writes the hashes into a mapped slot and rings; the
// kernel reads them over the bus, searches the table, writes the locations
// back into the slot and answers. Large batches are searched by hix_search
// launched as usual (persist.go), also straight from the mapped slots.
//
// It includes hashindex.cu for the table layout and the unit helpers
// (signature, alternate, Unit, ballots, shuffles), so that both searches
// share one definition of where a key lives, and for search_unit, the
// search itself: this kernel differs only in how it loads (PersistLoads):
// table words with __ldcg (L2, never L1), because the table changes between
// batches (inserts and deletes run as other kernels while this one waits)
// and L1 is not coherent with writes from other kernels while a kernel is
// resident.
//
// Defines from Go (persist_gpu.go): SEARCH_JOBS (hashindex.cu), PS_THREADS
// (threads of the one block), the control word offsets CTL_SEQ, CTL_DONE,
// CTL_QUIT, CTL_HITS, CTL_EXITS, and the doorbell word's fields
// BELL_JOB_BITS and BELL_SLOT_BITS (batch number | slot | jobs).
#include "hashindex_kernels.cuh"
#include "warpkv/order.cuh" // ld_acquire_sys, st_release_sys, globaltimer_ns

#ifndef PS_THREADS
#error "PS_THREADS must be defined (persist.go passes it)"
#endif

// ld_volatile: a plain load of host-mapped memory the compiler does not
// cache in a register (for words the host writes before the doorbell).
__device__ __forceinline__ u64 ld_volatile(const u64* p) { return *(const volatile u64*)p; }

// PersistLoads is how hix_persist's search_unit reads memory: table words
// through L2 (__ldcg; the table changes between batches while the kernel
// stays resident, and L1 is not coherent with other kernels' writes) and
// the hashes once from mapped host memory (__ldcv).
struct PersistLoads {
    static __device__ __forceinline__ u32 word(const u32* p) { return __ldcg(p); }
    static __device__ __forceinline__ u64 hash(const u64* p) { return __ldcv(p); }
};

// hix_persist: the resident search. One block of PS_THREADS threads.
// Thread mapping: thread 0 polls the doorbell ctl[CTL_SEQ] until it differs
// from the last doorbell word served (initially start_bell); the word
// holds the batch's slot and size, so a batch costs one read of host
// memory to learn of it. The block's units (8 lanes each) take groups of
// SEARCH_JOBS jobs of the slot, striding by the block's units, and write
// the locations into the slot's outputs; after the block's barrier thread
// 0 stores the hit count, and with a release store at system scope the
// doorbell word into ctl[CTL_DONE]. The release is cumulative: the
// outputs the other threads wrote before the barrier are visible to the
// host before the word is, so no thread fences on its own (a system fence
// per thread cost about a microsecond a batch on an H200). No host memory
// is read after the batch's hashes: each read is a bus round trip the
// host waits for.
// The kernel exits when ctl[CTL_QUIT] is set or no batch came for idle_ns,
// counting its exit in ctl[CTL_EXITS] (the host launches it again when
// needed: persist.go).
// Invariant: read-only on the table; each batch's outputs are written
// before its number is published in CTL_DONE, and a batch is served once.
extern "C" __global__ void __launch_bounds__(PS_THREADS, 1)
hix_persist(const u32* __restrict__ table, u32 mask, u32 pmask, u64* ctl, const u64* hashes_base, u32* out_base,
            u64 slot_jobs, u64 start_bell, u64 idle_ns) {
    __shared__ u64 s_bell;
    __shared__ int s_exit;
    __shared__ u32 s_hits;
    u64 last = start_bell;
    Unit u = unit_of();
    for (;;) {
        if (threadIdx.x == 0) {
            u64 t0 = globaltimer_ns();
            int ex = 0;
            u64 bell;
            for (;;) {
                bell = ld_acquire_sys(ctl + CTL_SEQ);
                if (bell != last) break;
                if (ld_volatile(ctl + CTL_QUIT)) {
                    ex = 1;
                    break;
                }
                if (globaltimer_ns() - t0 > idle_ns) {
                    ex = 2;
                    break;
                }
            }
            s_exit = ex;
            if (!ex) {
                s_bell = bell;
                s_hits = 0;
            }
        }
        __syncthreads();
        if (s_exit) {
            if (threadIdx.x == 0) {
                *(volatile u64*)(ctl + CTL_EXITS) = *(volatile u64*)(ctl + CTL_EXITS) + 1;
                __threadfence_system();
            }
            return;
        }
        u64 bell = s_bell;
        u64 n = bell & ((1ull << BELL_JOB_BITS) - 1);
        u64 slot = (bell >> BELL_JOB_BITS) & ((1ull << BELL_SLOT_BITS) - 1);
        const u64* hashes = hashes_base + slot * slot_jobs;
        u32* out = out_base + slot * slot_jobs;
        u32 hits = 0;
        for (u64 first = (u64)(threadIdx.x / CELLS) * SEARCH_JOBS; first < n; first += (PS_THREADS / CELLS) * SEARCH_JOBS)
            hits += search_unit<PersistLoads>(table, mask, pmask, hashes, n, out, first, u);
        if (hits) atomicAdd(&s_hits, hits);
        __syncthreads();
        if (threadIdx.x == 0) {
            *(volatile u64*)(ctl + CTL_HITS) = s_hits;
            st_release_sys(ctl + CTL_DONE, bell); // after the hit count and, through the barrier, the outputs
        }
        last = bell;
    }
}
