// persist.cu: a resident search kernel for the Mega-KV index. It stays on
// the device between batches and polls doorbells in mapped host memory,
// so that a small search batch costs no kernel launch, no copy and no
// driver call: the host writes the hashes into a mapped slot and rings the
// slot's doorbell; the slot's block reads them over the bus, searches the
// table and writes the locations back, each tagged with the batch. Every slot
// has its own block, doorbell and answer, so the batches of different
// slots (a server's event loops) are served at the same time. Large
// batches are searched by hix_search launched as usual (persist_gpu.go),
// also straight from the mapped slots.
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
// (the searching threads of a block), the control block's layout CTL_LINE
// (words of a line), CTL_EXITS (line 0), CTL_BELLS (the first slot's
// doorbell line), CTL_DONES (the first slot's answer line), CTL_SLOT (a
// slot's stride), MAX_RESIDENT (the most jobs of a batch), the device
// words DEV_EXIT, DEV_ACTIVE, DEV_EXITED, the trace words TR_*, and the
// doorbell word's jobs field BELL_JOB_BITS (batch number | jobs; the slot
// is the doorbell's).
#include "hashindex_kernels.cuh"
#include "warpkv/order.cuh" // ld_relaxed_sys, st_relaxed_sys, globaltimer_ns

#if !defined(PS_THREADS) || !defined(CTL_LINE) || !defined(CTL_BELLS)
#error "PS_THREADS and the CTL_* layout must be defined (persist_gpu.go passes them)"
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

// searchers_sync: a barrier of the block's PS_THREADS searching threads
// only (named barrier 1; the polling warp does not take part). Like
// __syncthreads it orders the memory accesses of the threads it joins.
__device__ __forceinline__ void searchers_sync() { asm volatile("bar.sync 1, %0;" ::"n"(PS_THREADS) : "memory"); }

// hix_persist: the resident search. One block per slot (blockIdx.x), of
// PS_THREADS searching threads followed by one polling warp.
// Thread mapping: lane 0 of the polling warp (the poller) loads the slot's
// doorbell ctl[CTL_BELLS + slot*CTL_SLOT] over the bus again and again
// (relaxed loads: an acquire at system scope serialized the poller's loads
// and the block's stores on an H200; more polling warps a block did not
// look more often, as a block's loads of mapped memory were served one at
// a time: BENCHMARKS.md). When it reads a newer doorbell word (batch
// numbers grow) it publishes it to the block in shared memory. Searcher
// thread 0 spins on that shared word and passes the batch to the other
// searchers through their barrier; the
// block's units (8 lanes each) take groups of SEARCH_JOBS jobs of the
// slot, striding by the units of PS_THREADS threads, search them into
// shared memory (s_out) and store each job's location, tagged with the
// batch's number in the high 32 bits, into the slot's tagged answers with
// one relaxed 8-byte store: the host takes an answer in when its tag is
// the batch's, so no fence orders the stores (a release store at system
// scope after a barrier cost 2.5-3 us a batch on an H200). Thread 0 also
// stores the doorbell word into the slot's answer word ctl[CTL_DONES +
// slot*CTL_SLOT] (what a batch of no jobs waits for, and what the host
// checks when the kernel has gone). No host memory is read after the
// batch's hashes.
// A launch starts from the answers in the control block: a slot whose
// doorbell differs from its answer has a batch waiting, which a relaunch
// after an exit so serves. The kernel exits when dev[DEV_EXIT] holds this
// launch's number gen, which every block's poller reads each round: the
// host's Close writes it, and so does a poller that finds the whole kernel idle
// (its slot's last batch and dev[DEV_ACTIVE], every block's latest answer,
// older than idle_ns). A block's searchers leave between batches, all
// together (thread 0 decides before their barrier); the last block to exit
// counts the exit in ctl[CTL_EXITS] (the host launches the kernel again
// when needed). With trace (else null), thread 0 of each block adds its
// batches, their time from seeing the doorbell to the searchers' barrier
// after the batch and the answer word's store, and the poller its doorbell
// loads and their time, to the block's trace line.
// Invariant: read-only on the table; each batch is served once, and each
// of its answers carries its number.
extern "C" __global__ void __launch_bounds__(PS_THREADS + 32, 1)
hix_persist(const u32* __restrict__ table, u32 mask, u32 pmask, u64* ctl, const u64* hashes_base, u64* tagged_base,
            u64 slot_jobs, u64 tagged_jobs, u64 idle_ns, u64* dev, u64 gen, u64* trace) {
    __shared__ unsigned long long s_bell; // the newest doorbell word the poller read
    __shared__ int s_exit;                // the poller left: the searchers leave when idle
    __shared__ u64 s_go[2];               // the batch the searchers serve next (0: exit), by turn
    __shared__ u32 s_out[MAX_RESIDENT];   // search_unit's outputs, tagged on their way out
    const u64 slot = blockIdx.x;
    const u64* bellp = ctl + CTL_BELLS + slot * CTL_SLOT;
    u64* donep = ctl + CTL_DONES + slot * CTL_SLOT;
    volatile unsigned long long* vbell = &s_bell;
    volatile int* vexit = &s_exit;
    if (threadIdx.x == 0) {
        s_go[0] = ld_volatile(donep); // the last batch served: a doorbell that differs waits
        s_bell = s_go[0];
        s_exit = 0;
    }
    __syncthreads();
    u64 last = s_go[0]; // (before the poller publishes)
    if (threadIdx.x >= PS_THREADS) {
        // The polling warp: lane 0 polls.
        if (threadIdx.x != PS_THREADS) return;
        u64 v = ld_relaxed_sys(bellp), t;
        const u64 t0 = globaltimer_ns();
        u64 active = t0, loads = 0, quit = 0;
        for (;;) {
            if (v > *vbell) { // a newer batch (numbers grow): publish it
                __threadfence_block();
                *vbell = v; // (the poller alone writes it)
                active = globaltimer_ns();
            }
            if (quit == gen) break;
            t = globaltimer_ns();
            if (t - active > idle_ns) {
                u64 a = ld_relaxed_gpu(dev + DEV_ACTIVE);
                if (a < active || t - a > idle_ns) {
                    atomicMax((unsigned long long*)(dev + DEV_EXIT), (unsigned long long)gen);
                    break;
                }
                active = a;
            }
            quit = ld_relaxed_gpu(dev + DEV_EXIT); // issued before the doorbell's load, used after
            v = ld_relaxed_sys(bellp);
            loads++;
        }
        *vexit = 1;
        if (trace) {
            u64* tr = trace + slot * CTL_LINE;
            tr[TR_LOADS] += loads;
            tr[TR_LOAD_NS] += globaltimer_ns() - t0;
        }
        return;
    }
    Unit u = unit_of();
    searchers_sync(); // every searcher has read last before thread 0 writes s_go
    for (u32 turn = 1;; turn ^= 1) {
        // Thread 0 writes this turn's word while a slow searcher may still
        // read the last turn's (a batch of no jobs is answered at once):
        // two words, so that it never overwrites one being read.
        if (threadIdx.x == 0) {
            u64 b;
            while ((b = *vbell) == last && !*vexit) {
            }
            s_go[turn] = b == last ? 0 : b;
        }
        searchers_sync(); // every searcher serves the same batch, or leaves
        u64 bell = s_go[turn];
        if (bell == 0) break;
        __threadfence_block(); // the doorbell's load (relaxed: the hashes' loads depend on it), before the hashes
        u64 t0 = threadIdx.x == 0 && trace ? globaltimer_ns() : 0;
        u64 n = bell & ((1ull << BELL_JOB_BITS) - 1);
        const u64 tag = (bell >> BELL_JOB_BITS) << 32; // the batch's number, low 32 bits
        const u64* hashes = hashes_base + slot * slot_jobs;
        u64* tagged = tagged_base + slot * tagged_jobs;
        for (u64 first = (u64)(threadIdx.x / CELLS) * SEARCH_JOBS; first < n; first += (PS_THREADS / CELLS) * SEARCH_JOBS) {
            search_unit<PersistLoads>(table, mask, pmask, hashes, n, s_out, first, u);
            u64 j = first + u.lane; // the job whose result this lane wrote
            if (u.lane < min((u64)SEARCH_JOBS, n - first)) st_relaxed_sys(tagged + j, tag | s_out[j]);
        }
        if (trace) searchers_sync(); // (uniform) the batch's whole time, for the trace
        if (threadIdx.x == 0) {
            u64 t1 = trace ? globaltimer_ns() : 0;
            st_relaxed_sys(donep, bell); // for a batch of no jobs, and the host's check of a kernel gone
            atomicMax((unsigned long long*)(dev + DEV_ACTIVE), (unsigned long long)globaltimer_ns());
            if (trace) {
                u64* tr = trace + slot * CTL_LINE;
                tr[TR_BATCHES] += 1;
                tr[TR_SERVE_NS] += t1 - t0;
                tr[TR_ANSWER_NS] += globaltimer_ns() - t1;
            }
        }
        last = bell;
    }
    // Exit: the last block of the launch counts it for the host.
    if (threadIdx.x == 0) {
        __threadfence();
        unsigned long long done = atomicAdd((unsigned long long*)(dev + DEV_EXITED), 1ull) + 1;
        if (done % gridDim.x == 0) {
            *(volatile u64*)(ctl + CTL_EXITS) = *(volatile u64*)(ctl + CTL_EXITS) + 1;
            __threadfence_system();
        }
    }
}
