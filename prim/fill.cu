// fill.cu: small utility kernels used by tests and benchmarks to prepare
// device buffers without a host round trip.
#include "warpkv/types.cuh"

// fill_u32: out[i] = value for i < n.
// Thread mapping: one thread per element, grid-stride loop.
// Invariant: every element in [0, n) is written exactly once.
extern "C" __global__ void fill_u32(u32* out, u64 n, u32 value) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = value;
}

// random_u64: out[i] = splitmix64(seed + i), a deterministic pseudo-random
// sequence that the CPU reproduces (prim.SplitMix64) for checks.
// Thread mapping: one thread per element, grid-stride loop.
extern "C" __global__ void random_u64(u64* out, u64 n, u64 seed) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        out[i] = z ^ (z >> 31);
    }
}
