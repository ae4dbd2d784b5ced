// limits.cu: the memory-bound reference kernels that `warpkv bench limits`
// times to find a GPU's limits (launched by limits_gpu.go): a random fill of
// 16-byte words, a streaming copy, and random record gathers. Every other
// benchmark states its figures as fractions of what these reach.
#include "warpkv/types.cuh"

// LIMITS_BLOCK: threads per block of every kernel here (limits_gpu.go's
// limitsBlock); a gather group of up to 8 lanes never straddles a block.
#ifndef LIMITS_BLOCK
#error "LIMITS_BLOCK must be defined by the Go launcher"
#endif
static_assert(LIMITS_BLOCK % 8 == 0, "a block holds whole gather groups");

// mix64 is the SplitMix64 finalizer: a bijective hash of a 64-bit value.
__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// fill_random_v16: out[i] = four pseudo-random 32-bit words derived from
// (seed, i), never all zero, so that no hardware path can treat the data
// as compressible zeros.
// Thread mapping: one thread per 16-byte element, grid-stride loop.
// Invariant: every element in [0, n) is written exactly once.
extern "C" __global__ void fill_random_v16(uint4* out, u64 n, u64 seed) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 a = mix64(seed + 2 * i * 0x9E3779B97F4A7C15ull);
        u64 b = mix64(seed + (2 * i + 1) * 0x9E3779B97F4A7C15ull) | 1;
        out[i] = make_uint4((u32)a, (u32)(a >> 32), (u32)b, (u32)(b >> 32));
    }
}

// copy_v16: dst[i] = src[i] for i < n, 16 bytes per load and store.
// Thread mapping: one thread per 16-byte element, grid-stride loop; adjacent
// threads touch adjacent elements, so each warp moves 512 contiguous bytes.
// Invariant: every element in [0, n) is read once and written once.
extern "C" __global__ void copy_v16(const uint4* __restrict__ src, uint4* __restrict__ dst, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

// gather reads count records of LANES*16 bytes at pseudo-random positions
// of a table of (mask+1) records. Gather j reads record mix64(seed ^ j) & mask.
// Thread mapping: LANES consecutive threads form a group; the group reads
// one record per iteration, lane l loading the record's 16-byte word l, so
// a record is one coalesced request. Groups stride over j.
// Invariant: every gather j in [0, count) is done by exactly one group. Each
// thread folds what it read into one word written to sink[thread], so the
// loads cannot be optimized away and the writes are negligible traffic.
template <int LANES>
__device__ __forceinline__ void gather(const uint4* __restrict__ table, u64 mask, u64 count, u64 seed, u32* sink) {
    u64 tid = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    u64 groups = (gridDim.x * (u64)blockDim.x) / LANES;
    u32 lane = (u32)(tid % LANES);
    u32 acc = 0;
#pragma unroll 4
    for (u64 j = tid / LANES; j < count; j += groups) {
        u64 rec = mix64(seed ^ j) & mask;
        uint4 v = table[rec * LANES + lane];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    sink[tid] = acc;
}

// gather32, gather64, gather128: gather with 32-, 64- and 128-byte records
// (2, 4 and 8 lanes per record). The block size must be a multiple of 8.
extern "C" __global__ void gather32(const uint4* table, u64 mask, u64 count, u64 seed, u32* sink) {
    gather<2>(table, mask, count, seed, sink);
}
extern "C" __global__ void gather64(const uint4* table, u64 mask, u64 count, u64 seed, u32* sink) {
    gather<4>(table, mask, count, seed, sink);
}
extern "C" __global__ void gather128(const uint4* table, u64 mask, u64 count, u64 seed, u32* sink) {
    gather<8>(table, mask, count, seed, sink);
}
