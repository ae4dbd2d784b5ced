// hostwrite.cu: the store patterns BenchmarkHostWrites times, each
// writing n bytes of dst (a multiple of 16) in a grid-stride loop, into
// device memory or into pinned host memory mapped into the device (the
// stores then cross the bus as posted writes). The word written at byte
// offset o is a function of o and seed, so that no store is optimised out
// and the host can check what landed.

typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 hw_word(u64 o, u64 seed) { return (o ^ seed) * 0x9E3779B97F4A7C15ull; }

// hw_v4: thread i of T stores the 16-byte words i, i+T, ...: a warp's
// store covers 512 consecutive bytes.
extern "C" __global__ void hw_v4(ulonglong2 *dst, u64 n, u64 seed) {
    u64 w = n / 16, T = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < w; i += T)
        dst[i] = make_ulonglong2(hw_word(16 * i, seed), hw_word(16 * i + 8, seed));
}

// hw_u64x2: as hw_v4, but each 16-byte word stored as two 8-byte stores
// (aq_pairs' copy of a 16-byte key): each store of a warp covers every
// other 8 bytes of 512.
extern "C" __global__ void hw_u64x2(u64 *dst, u64 n, u64 seed) {
    u64 w = n / 16, T = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < w; i += T) {
        dst[2 * i] = hw_word(16 * i, seed);
        dst[2 * i + 1] = hw_word(16 * i + 8, seed);
    }
}

// hw_u64: thread i of T stores the 8-byte words i, i+T, ...: a warp's
// store covers 256 consecutive bytes.
extern "C" __global__ void hw_u64(u64 *dst, u64 n, u64 seed) {
    u64 w = n / 8, T = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < w; i += T) dst[i] = hw_word(8 * i, seed);
}

// hw_u32: thread i of T stores the 4-byte words i, i+T, ...: a warp's
// store covers 128 consecutive bytes (the low half of each 8-byte word).
extern "C" __global__ void hw_u32(u32 *dst, u64 n, u64 seed) {
    u64 w = n / 4, T = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < w; i += T) {
        u64 v = hw_word(8 * (i / 2), seed);
        dst[i] = (u32)(i % 2 ? v >> 32 : v);
    }
}

// hw_sparse: lane 0 of warp i of W stores the 8-byte words i, i+W, ...
// (the other lanes store nothing): each store is a partial write of its
// 32-byte sector, as one word a query written by the query's warp.
extern "C" __global__ void hw_sparse(u64 *dst, u64 n, u64 seed) {
    u64 w = n / 8, W = (u64)gridDim.x * blockDim.x / 32;
    if (threadIdx.x % 32) return;
    for (u64 i = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / 32; i < w; i += W) dst[i] = hw_word(8 * i, seed);
}
