// warpkv/lookback.cuh: single-pass tile scans by decoupled look-back
// (Merrill & Garland, "Single-pass Parallel Prefix Scan with Decoupled
// Look-back", 2016), shared by every kernel that scans across blocks (prim's
// scan.cu and select.cu).
//
// Interface, for a kernel whose blocks each scan one tile:
//   TileStatus<T>{words}   the published status of every tile: P =
//                          sizeof(T)/4 64-bit words per tile, zeroed before
//                          the launch (with the tile counter the kernel
//                          draws tile indices from, so that every tile's
//                          predecessors are already running);
//   TileShared<T, WARPS>   the shared memory of one tile scan in a block of
//                          WARPS warps;
//   draw_tile(shared, counter, tile_items, warp_items)
//                          the block's tile index and the thread's position
//                          (TilePos), called first by every thread;
//   scan_tile<Op, ROUNDS, V>(status, tile, shared, x, base)
//                          called by every thread of the block with its
//                          ROUNDS x V items x: base[r] receives the
//                          exclusive prefix over the whole input of its
//                          first item of round r, and the tile's inclusive
//                          prefix is returned; the tile's status is
//                          published for the tiles after it;
//   Op                     the operator: a struct with typedef value,
//                          static identity() and associative combine(a, b)
//                          (Sum<T> here); the value type needs shfl_up,
//                          shfl_down and shfl_idx overloads (those of u32
//                          and u64 are here; other types add theirs, found
//                          by argument-dependent lookup);
//   Vec<T, V>              V items of T moved by one vector instruction.
// Its ordered loads and stores of the tile statuses are order.cuh's
// (relaxed, GPU scope). Include warpkv/types.cuh first.
#pragma once

#include "warpkv/types.cuh"
#include "warpkv/order.cuh"

// Tile status: nothing published yet, the tile's own aggregate, or the
// inclusive prefix of everything up to and including the tile.
#define STATUS_INVALID 0u
#define STATUS_AGGREGATE 1u
#define STATUS_PREFIX 2u

// ---- warp shuffles of the scanned types ----

__device__ __forceinline__ u32 shfl_up(u32 v, int d) { return __shfl_up_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u64 shfl_up(u64 v, int d) { return __shfl_up_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u32 shfl_down(u32 v, int d) { return __shfl_down_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u64 shfl_down(u64 v, int d) { return __shfl_down_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u32 shfl_idx(u32 v, int l) { return __shfl_sync(FULL_MASK, v, l); }
__device__ __forceinline__ u64 shfl_idx(u64 v, int l) { return __shfl_sync(FULL_MASK, v, l); }

// Sum is the scan operator of plain prefix sums: addition modulo 2^bits,
// identity 0.
template <typename T>
struct Sum {
    typedef T value;
    __device__ __forceinline__ static T identity() { return 0; }
    __device__ __forceinline__ static T combine(T a, T b) { return a + b; }
};

// ---- tile status storage ----

// TileStatus: the status of a tile whose value T has P = sizeof(T)/4 32-bit
// pieces is P 64-bit words, each holding the status in its high half and
// one piece of the value in its low half, each written and read as one
// access. A reader takes the value only when all P words carry the same
// status (a tile caught between its aggregate and its prefix reads as not
// yet published, and is read again); statuses only grow, so each piece is
// then the one published with that status. For a 32-bit value this is one
// packed word. All P words are loaded at once: one memory round trip per
// look-back step and no fence for the writer. (A flag with separate value
// arrays, which the reader must load one after the other, cost a sixth of
// the bandwidth of the uint64 scan on an H100.)
template <typename T>
union Pieces {
    T value;
    u32 piece[sizeof(T) / 4];
};

template <typename T>
struct TileStatus {
    static constexpr int P = sizeof(T) / 4;
    u64* words;  // tile t: words[P*t .. P*t+P)
    __device__ __forceinline__ void publish(u64 tile, u32 status, T v) const {
        static_assert(sizeof(T) % 4 == 0, "tile values are whole 32-bit pieces");
        Pieces<T> u;
        u.value = v;
#pragma unroll
        for (int i = 0; i < P; ++i) st_relaxed_gpu(words + P * tile + i, ((u64)status << 32) | u.piece[i]);
    }
    __device__ __forceinline__ void read(u64 tile, u32& status, T& v) const {
        Pieces<T> u;
        u32 first = 0;
        bool same = true;
#pragma unroll
        for (int i = 0; i < P; ++i) {
            const u64 w = ld_relaxed_gpu(words + P * tile + i);
            u.piece[i] = (u32)w;
            if (i == 0) first = (u32)(w >> 32);
            else same = same && (u32)(w >> 32) == first;
        }
        status = same ? first : STATUS_INVALID;
        v = u.value;
    }
};

// look_back returns the exclusive prefix of tile (> 0): the combination of
// every earlier tile, in order. Called by all 32 lanes of one warp, after
// the tile's aggregate is published. Lane l inspects tile newest-l. The warp
// waits only for the tiles it needs: those newer than the newest inclusive
// prefix in the window, or all 32 when there is none. It then folds their
// aggregates with that prefix and stops, or folds all 32 aggregates and
// moves 32 tiles further back.
template <class Op, class State>
__device__ typename Op::value look_back(const State& st, u64 tile) {
    typedef typename Op::value T;
    const int lane = threadIdx.x % WARP;
    T exclusive = Op::identity();
    long long newest = (long long)tile - 1;
    for (;;) {
        const long long j = newest - lane;
        u32 status;
        T v = Op::identity();
        u32 prefixes, needed;
        do {
            if (j >= 0) {
                st.read((u64)j, status, v);
            } else {
                status = STATUS_PREFIX;  // before tile 0: the empty prefix
                v = Op::identity();
            }
            prefixes = __ballot_sync(FULL_MASK, status == STATUS_PREFIX);
            // Lanes up to and including the lowest one with a prefix (the
            // shift wraps to all lanes when that is lane 31), else all.
            needed = prefixes ? ((prefixes & (0u - prefixes)) << 1) - 1u : FULL_MASK;
        } while (__ballot_sync(FULL_MASK, status == STATUS_INVALID) & needed);
        const int last = prefixes ? __ffs(prefixes) - 1 : WARP - 1;
        if (lane > last) v = Op::identity();
        // Fold in tile order; a higher lane holds an older tile. Lane 0 ends
        // with v[last] + ... + v[0].
#pragma unroll
        for (int d = 1; d < WARP; d *= 2) {
            T older = shfl_down(v, d);
            if (lane + d < WARP) v = Op::combine(older, v);
        }
        exclusive = Op::combine(shfl_idx(v, 0), exclusive);
        if (prefixes) return exclusive;
        newest -= WARP;
    }
}

// Shared memory of one tile scan in a block of WARPS warps.
template <typename T, int WARPS>
struct TileShared {
    T warp_total[WARPS];
    T tile_prefix;
    u32 tile;
};

// TilePos is where a block's tile lies: its index, and the calling
// thread's lane and its warp's first item.
struct TilePos {
    u32 tile;
    int lane;
    u64 tile_start;
    u64 warp_start;
};

// draw_tile draws the block's tile index from *tile_counter (so that every
// earlier tile is already running and the look-back cannot deadlock) into
// sh.tile and returns the calling thread's position, for tiles of
// tile_items items of which each warp owns warp_items. All threads of the
// block call it once, first.
template <typename T, int WARPS>
__device__ __forceinline__ TilePos draw_tile(TileShared<T, WARPS>& sh, u32* tile_counter, u64 tile_items,
                                             u64 warp_items) {
    if (threadIdx.x == 0) sh.tile = atomicAdd(tile_counter, 1u);
    __syncthreads();
    TilePos p;
    p.tile = sh.tile;
    p.lane = threadIdx.x % WARP;
    p.tile_start = (u64)p.tile * tile_items;
    p.warp_start = p.tile_start + (threadIdx.x / WARP) * warp_items;
    return p;
}

// scan_tile computes base[r], the exclusive prefix over the whole input of
// the calling thread's first item of round r (so item x[r][k]'s prefix is
// base[r] combined with x[r][0..k)), and returns the inclusive prefix of the
// whole tile. It publishes the tile's status for later tiles. All threads of
// the block call it once. Returning one prefix per round rather than per
// item keeps the registers, and so the blocks per SM, up.
template <class Op, int ROUNDS, int V, int WARPS, class State>
__device__ typename Op::value scan_tile(const State& st, u32 tile, TileShared<typename Op::value, WARPS>& sh,
                                        const typename Op::value (&x)[ROUNDS][V],
                                        typename Op::value (&base)[ROUNDS]) {
    typedef typename Op::value T;
    const int lane = threadIdx.x % WARP;
    const int warp = threadIdx.x / WARP;

    // Per round: the thread's total, scanned across the warp in lane order.
    T round_pre[ROUNDS];
    T warp_run = Op::identity();
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        T t = x[r][0];
#pragma unroll
        for (int k = 1; k < V; ++k) t = Op::combine(t, x[r][k]);
        T inc = t;
#pragma unroll
        for (int d = 1; d < WARP; d *= 2) {
            T up = shfl_up(inc, d);
            if (lane >= d) inc = Op::combine(up, inc);
        }
        T exc = shfl_up(inc, 1);
        if (lane == 0) exc = Op::identity();
        round_pre[r] = Op::combine(warp_run, exc);
        warp_run = Op::combine(warp_run, shfl_idx(inc, WARP - 1));
    }
    if (lane == 0) sh.warp_total[warp] = warp_run;
    __syncthreads();

    T warp_pre = Op::identity();
    T aggregate = Op::identity();
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        if (w == warp) warp_pre = aggregate;
        aggregate = Op::combine(aggregate, sh.warp_total[w]);
    }

    if (warp == 0) {
        T prefix = Op::identity();
        if (tile == 0) {
            if (lane == 0) st.publish(0, STATUS_PREFIX, aggregate);
        } else {
            if (lane == 0) st.publish(tile, STATUS_AGGREGATE, aggregate);
            prefix = look_back<Op>(st, tile);
            if (lane == 0) st.publish(tile, STATUS_PREFIX, Op::combine(prefix, aggregate));
        }
        if (lane == 0) sh.tile_prefix = prefix;
    }
    __syncthreads();

    const T tile_prefix = sh.tile_prefix;
    const T thread_base = Op::combine(tile_prefix, warp_pre);
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) base[r] = Op::combine(thread_base, round_pre[r]);
    return Op::combine(tile_prefix, aggregate);
}

// Vec is V items of T loaded or stored by one vector instruction.
template <typename T, int V>
struct alignas(V * sizeof(T)) Vec {
    T v[V];
};
