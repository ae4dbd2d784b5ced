// scan.cu: single-pass prefix sums of 32- and 64-bit words by decoupled
// look-back (Merrill & Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", 2016). Sums wrap modulo 2^bits.
//
// Each block scans one tile of SCAN_BLOCK * SCAN_ROUNDS * V items, where V =
// SCAN_VEC_BYTES / sizeof(T) items make one vector load. The tile index comes
// from an atomic counter, so every tile's predecessors are already running
// and the look-back cannot deadlock. A tile publishes its aggregate as soon
// as it has it, then looks back over its predecessors (32 at a time, one per
// lane of warp 0) until it meets an inclusive prefix, and publishes its own
// inclusive prefix.
//
// Layout of a tile: warp w owns the items [w*WARP_ITEMS, (w+1)*WARP_ITEMS)
// of the tile; within them, round r is the 32 consecutive vectors
// [r*32, r*32+32), lane l holding vector r*32+l. So every load and store
// instruction of a warp covers 512 contiguous bytes.
//
// The tile statuses (and the tile counter) must be zero before each launch;
// scan_gpu.go clears them with a memset. The kernels read each input item
// before writing the output item of the same index and never touch another
// tile's items, so out may alias in.
//
// The look-back machinery (TileStatus, look_back, scan_tile) is
// warpkv/lookback.cuh, shared with select.cu.
#include "warpkv/lookback.cuh"

// Launch configuration, passed from scan_gpu.go (scanBlock, scanRounds,
// scanVecBytes) as -D options.
#if !defined(SCAN_BLOCK) || !defined(SCAN_ROUNDS) || !defined(SCAN_VEC_BYTES)
#error "SCAN_BLOCK, SCAN_ROUNDS and SCAN_VEC_BYTES are passed from scan_gpu.go"
#endif
#define SCAN_WARPS (SCAN_BLOCK / WARP)

// scan_body is the whole kernel for one element type and kind of scan.
template <typename T, bool INCLUSIVE, class State>
__device__ __forceinline__ void scan_body(const T* in, T* out, u64 n, const State& st, u32* tile_counter) {
    constexpr int V = SCAN_VEC_BYTES / sizeof(T);
    constexpr u64 WARP_ITEMS = (u64)WARP * SCAN_ROUNDS * V;
    constexpr u64 TILE_ITEMS = (u64)SCAN_BLOCK * SCAN_ROUNDS * V;
    __shared__ TileShared<T, SCAN_WARPS> sh;

    const auto [tile, lane, tile_start, warp_start] = draw_tile(sh, tile_counter, TILE_ITEMS, WARP_ITEMS);
    const bool vectors = tile_start + TILE_ITEMS <= n &&
                         (((u64)in | (u64)out) % SCAN_VEC_BYTES) == 0;

    T x[SCAN_ROUNDS][V];
#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; ++r) {
        const u64 i0 = warp_start + (u64)(r * WARP + lane) * V;
        if (vectors) {
            const Vec<T, V> w = *reinterpret_cast<const Vec<T, V>*>(in + i0);
#pragma unroll
            for (int k = 0; k < V; ++k) x[r][k] = w.v[k];
        } else {
#pragma unroll
            for (int k = 0; k < V; ++k) x[r][k] = i0 + k < n ? in[i0 + k] : (T)0;
        }
    }

    T base[SCAN_ROUNDS];
    scan_tile<Sum<T>, SCAN_ROUNDS, V>(st, tile, sh, x, base);

#pragma unroll
    for (int r = 0; r < SCAN_ROUNDS; ++r) {
        const u64 i0 = warp_start + (u64)(r * WARP + lane) * V;
        Vec<T, V> w;
        T p = base[r];
#pragma unroll
        for (int k = 0; k < V; ++k) {
            if (INCLUSIVE) p += x[r][k];
            w.v[k] = p;
            if (!INCLUSIVE) p += x[r][k];
        }
        if (vectors) {
            *reinterpret_cast<Vec<T, V>*>(out + i0) = w;
        } else {
#pragma unroll
            for (int k = 0; k < V; ++k)
                if (i0 + k < n) out[i0 + k] = w.v[k];
        }
    }
}

// The entry points are instantiations of scan_body, one per type and
// kind: extern "C" kernels cannot be templates, so SCAN_KERNEL spells each
// out (the name, the element type, and whether the scan is inclusive).
#define SCAN_KERNEL(NAME, T, INCLUSIVE)                                               \
    extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)                          \
    NAME(const T* in, T* out, u64 n, u64* status, u32* tile_counter) {                \
        scan_body<T, INCLUSIVE>(in, out, n, TileStatus<T>{status}, tile_counter);     \
    }

// scan_exclusive_u32: out[i] = in[0] + ... + in[i-1] (mod 2^32).
// Thread mapping: one block per tile of SCAN_BLOCK*SCAN_ROUNDS*4 items, tile
// index from *tile_counter; each thread holds SCAN_ROUNDS vectors of 4 items
// (layout at the top of the file). Invariant: status[t] goes 0 -> aggregate
// -> inclusive prefix of tiles 0..t, each value final when published.
SCAN_KERNEL(scan_exclusive_u32, u32, false)

// scan_inclusive_u32: out[i] = in[0] + ... + in[i] (mod 2^32).
// Thread mapping and invariant as scan_exclusive_u32.
SCAN_KERNEL(scan_inclusive_u32, u32, true)

// scan_exclusive_u64: out[i] = in[0] + ... + in[i-1] (mod 2^64).
// Thread mapping: as scan_exclusive_u32 with vectors of 2 items. Invariant:
// both status words of tile t go 0 -> aggregate -> inclusive prefix of tiles
// 0..t, each half final when published.
SCAN_KERNEL(scan_exclusive_u64, u64, false)

// scan_inclusive_u64: out[i] = in[0] + ... + in[i] (mod 2^64).
// Thread mapping and invariant as scan_exclusive_u64.
SCAN_KERNEL(scan_inclusive_u64, u64, true)
