// select.cu: single-pass stream compaction (select), run-length encoding and
// reduce-by-key, each one decoupled look-back scan (Merrill & Garland 2016)
// fused with its input and output stages:
//   - select scans keep-counts (flag != 0) and scatters kept items;
//   - reduce-by-key scans pairs (heads, segmented sum) under the segmented
//     sum operator; a head item (first of its run) writes its key and, from
//     its exclusive prefix, the finished sum of the previous run; the last
//     item writes the last run's sum and the number of runs;
//   - run-length encoding is reduce-by-key of implicit ones.
//
// Each block scans one tile of SELECT_BLOCK * SELECT_ROUNDS * V items, V
// items making one vector (V = SELECT_VEC_BYTES / the widest element read).
// Layout of a tile as in scan.cu: warp w owns items [w*WARP_ITEMS,
// (w+1)*WARP_ITEMS) of the tile; in round r lane l holds vector r*32+l.
//
// The tile statuses and the tile counter must be zero before each launch;
// select_gpu.go clears them with a memset. Outputs must not overlap inputs.
//
// The look-back machinery (TileStatus, look_back, scan_tile) is
// warpkv/lookback.cuh, shared with scan.cu; this file adds the shuffles and
// the operator of pair values.
#include "warpkv/lookback.cuh"

// Launch configuration, passed from select_gpu.go (selectBlock,
// selectRounds, selectVecBytes) as -D options.
#if !defined(SELECT_BLOCK) || !defined(SELECT_ROUNDS) || !defined(SELECT_VEC_BYTES)
#error "SELECT_BLOCK, SELECT_ROUNDS and SELECT_VEC_BYTES are passed from select_gpu.go"
#endif
#define SELECT_WARPS (SELECT_BLOCK / WARP)

// ---- scanned values and their operators ----

// Pair is the reduce-by-key scan value: the number of run heads in a range
// and the sum of the values after the range's last head (the whole range's
// sum when it holds no head).
template <typename V>
struct Pair {
    u32 heads;
    V sum;
};

template <typename V>
__device__ __forceinline__ Pair<V> shfl_up(Pair<V> p, int d) {
    return Pair<V>{shfl_up(p.heads, d), shfl_up(p.sum, d)};
}
template <typename V>
__device__ __forceinline__ Pair<V> shfl_down(Pair<V> p, int d) {
    return Pair<V>{shfl_down(p.heads, d), shfl_down(p.sum, d)};
}
template <typename V>
__device__ __forceinline__ Pair<V> shfl_idx(Pair<V> p, int l) {
    return Pair<V>{shfl_idx(p.heads, l), shfl_idx(p.sum, l)};
}

// SegSum: the segmented sum. a then b: heads add up; the sum restarts at b's
// last head when b has one. Associative, identity {0, 0}.
template <typename V>
struct SegSum {
    typedef Pair<V> value;
    __device__ __forceinline__ static Pair<V> identity() { return Pair<V>{0, 0}; }
    __device__ __forceinline__ static Pair<V> combine(Pair<V> a, Pair<V> b) {
        return Pair<V>{a.heads + b.heads, b.heads ? b.sum : a.sum + b.sum};
    }
};

// ---- loads ----

// load_items loads the V items of src at i0 into dst: one vector load when
// vectors is set (a full tile on aligned memory), else one load per item
// below n, and zero for items at or past n.
template <typename T, int V>
__device__ __forceinline__ void load_items(const T* src, u64 i0, u64 n, bool vectors, T (&dst)[V]) {
    if (vectors) {
        const Vec<T, V> w = *reinterpret_cast<const Vec<T, V>*>(src + i0);
#pragma unroll
        for (int k = 0; k < V; ++k) dst[k] = w.v[k];
    } else {
#pragma unroll
        for (int k = 0; k < V; ++k) dst[k] = i0 + k < n ? src[i0 + k] : (T)0;
    }
}

// aligned reports whether p can be read V items of T at a time.
template <typename T, int V>
__device__ __forceinline__ bool aligned(const T* p) {
    return (u64)p % (V * sizeof(T)) == 0;
}

// ---- select ----

// select_body: the whole select kernel for one element type.
template <typename T>
__device__ __forceinline__ void select_body(const T* in, const u8* flags, T* out, u64 n, u32* count,
                                            u64* status, u32* tile_counter) {
    constexpr int V = SELECT_VEC_BYTES / sizeof(T);
    constexpr u64 WARP_ITEMS = (u64)WARP * SELECT_ROUNDS * V;
    constexpr u64 TILE_ITEMS = (u64)SELECT_BLOCK * SELECT_ROUNDS * V;
    __shared__ TileShared<u32, SELECT_WARPS> sh;

    const auto [tile, lane, tile_start, warp_start] = draw_tile(sh, tile_counter, TILE_ITEMS, WARP_ITEMS);
    const bool vectors = tile_start + TILE_ITEMS <= n && aligned<T, V>(in) && aligned<u8, V>(flags);

    T items[SELECT_ROUNDS][V];
    u32 keep[SELECT_ROUNDS][V];
#pragma unroll
    for (int r = 0; r < SELECT_ROUNDS; ++r) {
        const u64 i0 = warp_start + (u64)(r * WARP + lane) * V;
        u8 f[V];
        load_items<u8, V>(flags, i0, n, vectors, f);
        load_items<T, V>(in, i0, n, vectors, items[r]);
#pragma unroll
        for (int k = 0; k < V; ++k) keep[r][k] = f[k] != 0;
    }

    u32 base[SELECT_ROUNDS];
    const u32 total = scan_tile<Sum<u32>, SELECT_ROUNDS, V>(TileStatus<u32>{status}, tile, sh, keep, base);

#pragma unroll
    for (int r = 0; r < SELECT_ROUNDS; ++r) {
        u32 at = base[r];
#pragma unroll
        for (int k = 0; k < V; ++k) {
            if (keep[r][k]) out[at] = items[r][k];
            at += keep[r][k];
        }
    }
    if (tile == gridDim.x - 1 && threadIdx.x == 0) *count = total;
}

// select_u32: out[0..count) = the in[i] with flags[i] != 0, in order;
// count[0] = their number.
// Thread mapping: one block per tile of SELECT_BLOCK*SELECT_ROUNDS*4 items,
// tile index from *tile_counter; each thread holds SELECT_ROUNDS vectors of
// 4 items. Invariant: status[t] goes 0 -> aggregate -> inclusive prefix of
// the kept counts of tiles 0..t; a kept item's output index is its
// exclusive prefix.
extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)
select_u32(const u32* in, const u8* flags, u32* out, u64 n, u32* count, u64* status, u32* tile_counter) {
    select_body<u32>(in, flags, out, n, count, status, tile_counter);
}

// select_u64: as select_u32 for 64-bit items, vectors of 2 items.
// Thread mapping and invariant as select_u32.
extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)
select_u64(const u64* in, const u8* flags, u64* out, u64 n, u32* count, u64* status, u32* tile_counter) {
    select_body<u64>(in, flags, out, n, count, status, tile_counter);
}

// ---- reduce-by-key and run-length encoding ----

// reduce_by_key_body: the whole reduce-by-key kernel for key type K and
// value type V; with vals == nullptr every value is 1 (run-length encoding).
template <typename K, typename V>
__device__ __forceinline__ void reduce_by_key_body(const K* keys, const V* vals, K* uniq, V* sums, u64 n,
                                                   u32* runs, u64* status, u32* tile_counter) {
    constexpr int IV = SELECT_VEC_BYTES / (sizeof(K) > sizeof(V) ? sizeof(K) : sizeof(V));
    constexpr u64 WARP_ITEMS = (u64)WARP * SELECT_ROUNDS * IV;
    constexpr u64 TILE_ITEMS = (u64)SELECT_BLOCK * SELECT_ROUNDS * IV;
    typedef SegSum<V> Op;
    __shared__ TileShared<Pair<V>, SELECT_WARPS> sh;

    const auto [tile, lane, tile_start, warp_start] = draw_tile(sh, tile_counter, TILE_ITEMS, WARP_ITEMS);
    const bool vectors = tile_start + TILE_ITEMS <= n && aligned<K, IV>(keys) &&
                         (vals == nullptr || aligned<V, IV>(vals));

    K k[SELECT_ROUNDS][IV];
    Pair<V> x[SELECT_ROUNDS][IV];
#pragma unroll
    for (int r = 0; r < SELECT_ROUNDS; ++r) {
        const u64 i0 = warp_start + (u64)(r * WARP + lane) * IV;
        load_items<K, IV>(keys, i0, n, vectors, k[r]);
        V v[IV];
        if (vals != nullptr) {
            load_items<V, IV>(vals, i0, n, vectors, v);
        } else {
#pragma unroll
            for (int j = 0; j < IV; ++j) v[j] = 1;
        }
#pragma unroll
        for (int j = 0; j < IV; ++j) x[r][j] = Pair<V>{0, i0 + j < n ? v[j] : (V)0};
    }

    // Head flags. The key before a lane's first item is the left lane's last
    // item; for lane 0 it is lane 31's last item of the previous round, or
    // for the first round the item before the warp's range, read from memory.
    K before = 0;
    if (lane == 0 && warp_start > 0 && warp_start < n) before = keys[warp_start - 1];
#pragma unroll
    for (int r = 0; r < SELECT_ROUNDS; ++r) {
        const u64 i0 = warp_start + (u64)(r * WARP + lane) * IV;
        const K left = shfl_up(k[r][IV - 1], 1);
        if (r > 0) {
            const K prev_round = shfl_idx(k[r - 1][IV - 1], WARP - 1);
            if (lane == 0) before = prev_round;
        }
        K prev = lane > 0 ? left : before;
#pragma unroll
        for (int j = 0; j < IV; ++j) {
            const u64 i = i0 + j;
            x[r][j].heads = i < n && (i == 0 || k[r][j] != prev);
            prev = k[r][j];
        }
    }

    Pair<V> base[SELECT_ROUNDS];
    scan_tile<Op, SELECT_ROUNDS, IV>(TileStatus<Pair<V>>{status}, tile, sh, x, base);

#pragma unroll
    for (int r = 0; r < SELECT_ROUNDS; ++r) {
        const u64 i0 = warp_start + (u64)(r * WARP + lane) * IV;
        Pair<V> pre = base[r];  // exclusive prefix of item i
#pragma unroll
        for (int j = 0; j < IV; ++j) {
            const u64 i = i0 + j;
            if (x[r][j].heads) {
                // pre.heads runs start before i; the previous run ended at i-1.
                const u32 run = pre.heads;
                uniq[run] = k[r][j];
                if (run > 0) sums[run - 1] = pre.sum;
            }
            pre = Op::combine(pre, x[r][j]);
            if (i + 1 == n) {
                sums[pre.heads - 1] = pre.sum;
                *runs = pre.heads;
            }
        }
    }
}

// Thread mapping of the reduce-by-key and run-length kernels: one block per
// tile of SELECT_BLOCK*SELECT_ROUNDS*IV items, tile index from
// *tile_counter, each thread holding SELECT_ROUNDS vectors of IV = 16 /
// (widest of key and value) items. Invariant: tile t's status words go 0 ->
// aggregate -> inclusive prefix (heads, segmented sum) of tiles 0..t; run
// r's key is written by its head item, its sum by the next run's head item
// (or by the last item, for the last run), each exactly once.

// The entry points are instantiations of reduce_by_key_body, one per key
// and value type: extern "C" kernels cannot be templates, so
// REDUCE_BY_KEY_KERNEL spells each out (run-length encoding passes no
// values: RUN_LENGTH_KERNEL).
#define REDUCE_BY_KEY_KERNEL(NAME, K, V)                                                                  \
    extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)                                            \
    NAME(const K* keys, const V* vals, K* uniq, V* sums, u64 n, u32* runs, u64* status, u32* tile_counter) { \
        reduce_by_key_body<K, V>(keys, vals, uniq, sums, n, runs, status, tile_counter);                  \
    }
#define RUN_LENGTH_KERNEL(NAME, K)                                                                        \
    extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)                                            \
    NAME(const K* keys, K* uniq, u32* counts, u64 n, u32* runs, u64* status, u32* tile_counter) {         \
        reduce_by_key_body<K, u32>(keys, nullptr, uniq, counts, n, runs, status, tile_counter);           \
    }

// reduce_by_key_u32_u32: uniq[r], sums[r] = the key and the sum of the
// values of the r-th run of equal consecutive keys; runs[0] = the number of
// runs.
REDUCE_BY_KEY_KERNEL(reduce_by_key_u32_u32, u32, u32)

// reduce_by_key_u32_u64: as reduce_by_key_u32_u32 with 64-bit values.
REDUCE_BY_KEY_KERNEL(reduce_by_key_u32_u64, u32, u64)

// reduce_by_key_u64_u32: as reduce_by_key_u32_u32 with 64-bit keys.
REDUCE_BY_KEY_KERNEL(reduce_by_key_u64_u32, u64, u32)

// reduce_by_key_u64_u64: as reduce_by_key_u32_u32 with 64-bit keys and
// values.
REDUCE_BY_KEY_KERNEL(reduce_by_key_u64_u64, u64, u64)

// run_length_encode_u32: uniq[r], counts[r] = the key and the length of the
// r-th run of equal consecutive keys; runs[0] = the number of runs.
// Reduce-by-key of implicit ones; thread mapping and invariant as above.
RUN_LENGTH_KERNEL(run_length_encode_u32, u32)

// run_length_encode_u64: as run_length_encode_u32 for 64-bit keys.
RUN_LENGTH_KERNEL(run_length_encode_u64, u64)
