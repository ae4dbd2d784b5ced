// merge.cu: stable merge of two ascending key runs a and b (with optional
// values), by merge path (Green, McColl, Bader: "GPU Merge Path", 2012).
//
// The output of n = na + nb elements is cut into tiles of MERGE_TILE
// outputs. Output position d (a "diagonal") is produced from the first i
// elements of a and the first d - i of b, where i is the merge-path split of
// d. merge_partition_* finds the split of every tile boundary by binary
// search in global memory; merge_tile_* then merges one tile per block: it
// stages the tile's a- and b-keys in shared memory, every thread finds the
// split of its own diagonal inside the tile by binary search and merges
// MERGE_ITEMS outputs sequentially, and the block writes the keys and the
// values (gathered from global memory by source index) coalesced.
//
// Ties: on equal keys every element of a comes before every element of b,
// and each run keeps its order. The split of diagonal d is therefore the
// smallest i with a[i] > b[d-1-i]; the sequential merge takes a on <=. The
// same rule in both kernels makes per-tile merges join into the one stable
// merge.
#include "warpkv/types.cuh"

// Launch configuration, passed from merge_gpu.go as -D options: MERGE_BLOCK
// (threads per merge_tile block), MERGE_ITEMS (outputs per thread; odd, so
// shared reads at stride MERGE_ITEMS avoid bank conflicts) and
// MERGE_PARTITION_BLOCK (threads per merge_partition block).
#if !defined(MERGE_BLOCK) || !defined(MERGE_ITEMS) || !defined(MERGE_PARTITION_BLOCK)
#error "MERGE_BLOCK, MERGE_ITEMS and MERGE_PARTITION_BLOCK are passed from merge_gpu.go"
#endif
#define MERGE_TILE (MERGE_BLOCK * MERGE_ITEMS)   // outputs per block

// mergeSplit returns the merge-path split of diagonal d of runs a (na) and
// b (nb): the number of the first d outputs that come from a. Ties put a
// first: it is the smallest i in [max(0,d-nb), min(d,na)] with
// a[i] > b[d-1-i].
template <typename K, typename I>
__device__ __forceinline__ I mergeSplit(const K* a, I na, const K* b, I nb, I d) {
    I lo = d > nb ? d - nb : 0;
    I hi = d < na ? d : na;
    while (lo < hi) {
        I mid = lo + (hi - lo) / 2;
        if (a[mid] <= b[d - 1 - mid])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// mergePartition: splits[t] = merge-path split of diagonal min(t*MERGE_TILE, na+nb),
// for t in [0, ntiles].
// Thread mapping: one thread per tile boundary t.
// Invariant: splits is nondecreasing, splits[0] = 0, splits[ntiles] = na, and
// splits[t+1]-splits[t] <= MERGE_TILE.
template <typename K>
__device__ __forceinline__ void mergePartition(const K* __restrict__ a, u64 na, const K* __restrict__ b, u64 nb,
                                               u64 ntiles, u64* __restrict__ splits) {
    u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (t > ntiles)
        return;
    u64 n = na + nb;
    u64 d = t * MERGE_TILE;
    if (d > n)
        d = n;
    splits[t] = mergeSplit<K, u64>(a, na, b, nb, d);
}

extern "C" __global__ void merge_partition_k32(const u32* a, u64 na, const u32* b, u64 nb, u64 ntiles, u64* splits) {
    mergePartition<u32>(a, na, b, nb, ntiles, splits);
}

extern "C" __global__ void merge_partition_k64(const u64* a, u64 na, const u64* b, u64 nb, u64 ntiles, u64* splits) {
    mergePartition<u64>(a, na, b, nb, ntiles, splits);
}

// mergeTile: block t writes outputs [t*MERGE_TILE, min((t+1)*MERGE_TILE, n))
// of the merge of a and b: outK, and outV when VALS (values follow their
// keys; av, bv, outV are unused otherwise).
// Thread mapping: one block of MERGE_BLOCK threads per tile; thread x merges
// tile outputs [x*MERGE_ITEMS, (x+1)*MERGE_ITEMS); loads and stores are
// strided by MERGE_BLOCK (coalesced).
// Invariant: the tile consumes a[splits[t], splits[t+1]) and the matching
// b-range, so every output position is written exactly once.
template <typename K, typename V, bool VALS>
__device__ __forceinline__ void mergeTile(const K* __restrict__ ak, const V* __restrict__ av, u64 na,
                                          const K* __restrict__ bk, const V* __restrict__ bv, u64 nb,
                                          const u64* __restrict__ splits, K* __restrict__ outK, V* __restrict__ outV) {
    __shared__ K keys[MERGE_TILE]; // the tile's a-keys, then its b-keys; later the merged keys
    __shared__ u32 src[MERGE_TILE]; // merged position -> index into the staged keys

    const u64 n = na + nb;
    const u64 tile = blockIdx.x;
    const u64 d0 = tile * MERGE_TILE;
    const u64 d1 = d0 + MERGE_TILE < n ? d0 + MERGE_TILE : n;
    const int total = (int)(d1 - d0);
    const u64 a0 = splits[tile], a1 = splits[tile + 1];
    const u64 b0 = d0 - a0;
    // For ascending runs 0 <= a1-a0 <= total. Clamping keeps every access in
    // bounds when the runs are not ascending (the order is then unspecified).
    const int nat = a1 < a0 ? 0 : (a1 - a0 > (u64)total ? total : (int)(a1 - a0));
    const int nbt = total - nat;

    for (int x = threadIdx.x; x < total; x += MERGE_BLOCK)
        keys[x] = x < nat ? ak[a0 + x] : bk[b0 + (x - nat)];
    __syncthreads();

    // This thread's diagonal inside the tile and its split.
    const int d = min((int)threadIdx.x * MERGE_ITEMS, total);
    int i = mergeSplit<K, int>(keys, nat, keys + nat, nbt, d);
    int j = nat + (d - i); // index of the next b-key in keys
    K ka = i < nat ? keys[i] : K(0);
    K kb = j < total ? keys[j] : K(0);
    K rk[MERGE_ITEMS];
    u32 rs[MERGE_ITEMS];
#pragma unroll
    for (int k = 0; k < MERGE_ITEMS; k++) {
        if (d + k < total) {
            bool takeA = j >= total || (i < nat && ka <= kb);
            if (takeA) {
                rk[k] = ka;
                rs[k] = (u32)i;
                i++;
                if (i < nat)
                    ka = keys[i];
            } else {
                rk[k] = kb;
                rs[k] = (u32)j;
                j++;
                if (j < total)
                    kb = keys[j];
            }
        }
    }
    __syncthreads(); // all reads of the staged keys are done

#pragma unroll
    for (int k = 0; k < MERGE_ITEMS; k++) {
        if (d + k < total) {
            keys[d + k] = rk[k];
            src[d + k] = rs[k];
        }
    }
    __syncthreads();

    for (int x = threadIdx.x; x < total; x += MERGE_BLOCK) {
        outK[d0 + x] = keys[x];
        if (VALS) {
            int s = (int)src[x];
            outV[d0 + x] = s < nat ? av[a0 + s] : bv[b0 + (s - nat)];
        }
    }
}

// The merge_tile entry points instantiate mergeTile, one per key and value
// type: extern "C" kernels cannot be templates, so MERGE_KEYS_KERNEL (keys
// only) and MERGE_PAIRS_KERNEL (keys and values) spell each out.
#define MERGE_KEYS_KERNEL(NAME, K)                                                                     \
    extern "C" __global__ void NAME(const K* ak, u64 na, const K* bk, u64 nb, const u64* splits, K* outK) { \
        mergeTile<K, u32, false>(ak, nullptr, na, bk, nullptr, nb, splits, outK, nullptr);             \
    }
#define MERGE_PAIRS_KERNEL(NAME, K, V)                                                                 \
    extern "C" __global__ void NAME(const K* ak, const V* av, u64 na, const K* bk, const V* bv, u64 nb, \
                                    const u64* splits, K* outK, V* outV) {                             \
        mergeTile<K, V, true>(ak, av, na, bk, bv, nb, splits, outK, outV);                             \
    }

// 32-bit keys, alone or with 32- or 64-bit values.
MERGE_KEYS_KERNEL(merge_tile_k32, u32)
MERGE_PAIRS_KERNEL(merge_tile_k32_v32, u32, u32)
MERGE_PAIRS_KERNEL(merge_tile_k32_v64, u32, u64)

// 64-bit keys, alone or with 32- or 64-bit values.
MERGE_KEYS_KERNEL(merge_tile_k64, u64)
MERGE_PAIRS_KERNEL(merge_tile_k64_v32, u64, u32)
MERGE_PAIRS_KERNEL(merge_tile_k64_v64, u64, u64)
