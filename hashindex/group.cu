// group.cu: device-side grouping of insert and delete jobs by partition,
// the GPU twin of the CPU's stable counting sort (group.go).
//
// A batch is grouped in four steps on one stream: hix_group_keys writes
// each job's partition and its batch index; a stable radix sort of the
// (partition, index) pairs over the partition bits (prim's
// DevSortPairsBits) orders the indices by partition, batch order kept
// within a partition; hix_group_gather moves the hashes and locations into
// that order; hix_group_starts finds where each partition's run begins.
// A small batch is keyed, sorted and gathered by hix_group_small in one
// block, then hix_group_starts finds the runs. The result has one run per
// partition, empty ones included (dense starts), so no compaction and no
// device-to-host count is needed.
//
// Launch configuration set by the Go side (hashindex_gpu.go) with -D options:
// SMALL_GROUP_MAX, the most jobs hix_group_small takes (a power of two),
// and SMALL_GROUP_THREADS, its block size.
#include "warpkv/types.cuh"

#if !defined(SMALL_GROUP_MAX) || !defined(SMALL_GROUP_THREADS)
#error "SMALL_GROUP_MAX and SMALL_GROUP_THREADS must be defined (hashindex_gpu.go passes them)"
#endif
#if (SMALL_GROUP_MAX & (SMALL_GROUP_MAX - 1)) != 0
#error "SMALL_GROUP_MAX must be a power of two"
#endif

// hix_group_keys: keys[i] = partition of job i = (low bits of hashes[i] &
// mask) >> pbits, order[i] = i.
// Thread mapping: one thread per job.
// Invariant: keys[i] and order[i] are written once for every i < n.
extern "C" __global__ void hix_group_keys(const u64* __restrict__ hashes, u32 n, u32 mask, u32 pbits,
                                          u32* __restrict__ keys, u32* __restrict__ order) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    keys[i] = ((u32)hashes[i] & mask) >> pbits;
    order[i] = i;
}

// hix_group_gather: ghashes[k] = hashes[order[k]], glocs[k] = locs[order[k]]
// for every sorted position k < n.
// Thread mapping: one thread per sorted position; the reads are a gather,
// the writes coalesced.
// Invariant: order is a permutation of [0, n), so every output is written
// once.
extern "C" __global__ void hix_group_gather(const u64* __restrict__ hashes, const u32* __restrict__ locs,
                                            const u32* __restrict__ order, u32 n, u64* __restrict__ ghashes,
                                            u32* __restrict__ glocs) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    u32 i = order[k];
    ghashes[k] = hashes[i];
    glocs[k] = locs[i];
}

// hix_group_starts: starts[p] = the first sorted position whose partition
// is >= p (n if none), for every p in [0, parts], so partition p's run is
// [starts[p], starts[p+1]) and starts[parts] = n.
// Thread mapping: one thread per entry of starts, each a binary search of
// the sorted keys (log2 n reads, mostly cached).
// Invariant: keys[0, n) is sorted ascending; every entry is written once.
extern "C" __global__ void hix_group_starts(const u32* __restrict__ keys, u32 n, u32 parts,
                                            u32* __restrict__ starts) {
    u32 p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p > parts) return;
    u32 lo = 0, hi = n;
    while (lo < hi) {
        u32 mid = lo + (hi - lo) / 2;
        if (keys[mid] < p) lo = mid + 1;
        else hi = mid;
    }
    starts[p] = lo;
}

// hix_group_small: hix_group_keys, the sort and hix_group_gather of
// n <= SMALL_GROUP_MAX jobs in one block: ghashes, glocs and order as
// hix_group_gather writes them, and keys[k] = the partition of sorted
// position k, the input of hix_group_starts.
// Thread mapping: one block of SMALL_GROUP_THREADS threads striding over
// the jobs. The block sorts the keys partition << 32 | batch index in
// shared memory with a bitonic sort over size elements (a power of two
// >= n; the padding keys are all ones, so they sort last): as the batch
// index is unique and in the low bits, the sort is stable by partition.
// Invariant: every output entry of the n jobs is written once;
// __syncthreads separates the sort's steps.
extern "C" __global__ void hix_group_small(const u64* __restrict__ hashes, const u32* __restrict__ locs, u32 n,
                                           u32 size, u32 mask, u32 pbits, u64* __restrict__ ghashes,
                                           u32* __restrict__ glocs, u32* __restrict__ order,
                                           u32* __restrict__ keys) {
    __shared__ u64 sorted[SMALL_GROUP_MAX];
    for (u32 i = threadIdx.x; i < size; i += blockDim.x)
        sorted[i] = i < n ? (u64)(((u32)hashes[i] & mask) >> pbits) << 32 | i : ~0ull;
    __syncthreads();
    for (u32 k = 2; k <= size; k <<= 1) {
        for (u32 j = k >> 1; j > 0; j >>= 1) {
            for (u32 i = threadIdx.x; i < size; i += blockDim.x) {
                u32 x = i ^ j;
                if (x > i) {
                    u64 a = sorted[i], b = sorted[x];
                    if ((a > b) == ((i & k) == 0)) { // ascending where bit k of i is 0
                        sorted[i] = b;
                        sorted[x] = a;
                    }
                }
            }
            __syncthreads();
        }
    }
    for (u32 k = threadIdx.x; k < n; k += blockDim.x) {
        u64 s = sorted[k];
        u32 i = (u32)s;
        ghashes[k] = hashes[i];
        glocs[k] = locs[i];
        order[k] = i;
        keys[k] = (u32)(s >> 32);
    }
}
