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
// The look-back machinery (TileStatus, look_back, scan_tile) is a copy of
// scan.cu's, with shuffles and an operator for pair values: keep them in
// step.
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned char u8;

// Launch configuration, mirrored by selectBlock, selectRounds and
// selectVecBytes in select_gpu.go: keep them equal.
#define SELECT_BLOCK 256
#define SELECT_ROUNDS 4
#define SELECT_VEC_BYTES 16

#define WARP 32
#define FULL_MASK 0xffffffffu
#define SELECT_WARPS (SELECT_BLOCK / WARP)

// Tile status: nothing published yet, the tile's own aggregate, or the
// inclusive prefix of everything up to and including the tile.
#define STATUS_INVALID 0u
#define STATUS_AGGREGATE 1u
#define STATUS_PREFIX 2u

// ---- memory operations with explicit ordering (generic addressing) ----

__device__ __forceinline__ u64 ld_relaxed_u64(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_relaxed_u64(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// ---- scanned values and their operators ----

// Pair is the reduce-by-key scan value: the number of run heads in a range
// and the sum of the values after the range's last head (the whole range's
// sum when it holds no head).
template <typename V>
struct Pair {
    u32 heads;
    V sum;
};

__device__ __forceinline__ u32 shfl_up(u32 v, int d) { return __shfl_up_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u64 shfl_up(u64 v, int d) { return __shfl_up_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u32 shfl_down(u32 v, int d) { return __shfl_down_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u64 shfl_down(u64 v, int d) { return __shfl_down_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u32 shfl_idx(u32 v, int l) { return __shfl_sync(FULL_MASK, v, l); }
__device__ __forceinline__ u64 shfl_idx(u64 v, int l) { return __shfl_sync(FULL_MASK, v, l); }
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

// Sum: addition modulo 2^bits, identity 0.
template <typename T>
struct Sum {
    typedef T value;
    __device__ __forceinline__ static T identity() { return 0; }
    __device__ __forceinline__ static T combine(T a, T b) { return a + b; }
};

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
        for (int i = 0; i < P; ++i) st_relaxed_u64(words + P * tile + i, ((u64)status << 32) | u.piece[i]);
    }
    __device__ __forceinline__ void read(u64 tile, u32& status, T& v) const {
        Pieces<T> u;
        u32 first = 0;
        bool same = true;
#pragma unroll
        for (int i = 0; i < P; ++i) {
            const u64 w = ld_relaxed_u64(words + P * tile + i);
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

// Shared memory of one tile scan.
template <typename T>
struct TileShared {
    T warp_total[SELECT_WARPS];
    T tile_prefix;
    u32 tile;
};

// scan_tile computes base[r], the exclusive prefix over the whole input of
// the calling thread's first item of round r (so item x[r][k]'s prefix is
// base[r] combined with x[r][0..k)), and returns the inclusive prefix of the
// whole tile. It publishes the tile's status for later tiles. All threads of
// the block call it once. Returning one prefix per round rather than per
// item keeps the registers, and so the blocks per SM, up.
template <class Op, int ROUNDS, int V, class State>
__device__ typename Op::value scan_tile(const State& st, u32 tile, TileShared<typename Op::value>& sh,
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
    for (int w = 0; w < SELECT_WARPS; ++w) {
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

// ---- loads ----

// Vec is V items of T loaded by one vector instruction.
template <typename T, int V>
struct alignas(V * sizeof(T)) Vec {
    T v[V];
};

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
    __shared__ TileShared<u32> sh;

    if (threadIdx.x == 0) sh.tile = atomicAdd(tile_counter, 1u);
    __syncthreads();
    const u32 tile = sh.tile;
    const int lane = threadIdx.x % WARP;
    const u64 tile_start = (u64)tile * TILE_ITEMS;
    const u64 warp_start = tile_start + (threadIdx.x / WARP) * WARP_ITEMS;
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
    __shared__ TileShared<Pair<V>> sh;

    if (threadIdx.x == 0) sh.tile = atomicAdd(tile_counter, 1u);
    __syncthreads();
    const u32 tile = sh.tile;
    const int lane = threadIdx.x % WARP;
    const u64 tile_start = (u64)tile * TILE_ITEMS;
    const u64 warp_start = tile_start + (threadIdx.x / WARP) * WARP_ITEMS;
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

// reduce_by_key_u32_u32: uniq[r], sums[r] = the key and the sum of the
// values of the r-th run of equal consecutive keys; runs[0] = the number of
// runs.
extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)
reduce_by_key_u32_u32(const u32* keys, const u32* vals, u32* uniq, u32* sums, u64 n, u32* runs, u64* status,
                      u32* tile_counter) {
    reduce_by_key_body<u32, u32>(keys, vals, uniq, sums, n, runs, status, tile_counter);
}

// reduce_by_key_u32_u64: as reduce_by_key_u32_u32 with 64-bit values.
extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)
reduce_by_key_u32_u64(const u32* keys, const u64* vals, u32* uniq, u64* sums, u64 n, u32* runs, u64* status,
                      u32* tile_counter) {
    reduce_by_key_body<u32, u64>(keys, vals, uniq, sums, n, runs, status, tile_counter);
}

// reduce_by_key_u64_u32: as reduce_by_key_u32_u32 with 64-bit keys.
extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)
reduce_by_key_u64_u32(const u64* keys, const u32* vals, u64* uniq, u32* sums, u64 n, u32* runs, u64* status,
                      u32* tile_counter) {
    reduce_by_key_body<u64, u32>(keys, vals, uniq, sums, n, runs, status, tile_counter);
}

// reduce_by_key_u64_u64: as reduce_by_key_u32_u32 with 64-bit keys and
// values.
extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)
reduce_by_key_u64_u64(const u64* keys, const u64* vals, u64* uniq, u64* sums, u64 n, u32* runs, u64* status,
                      u32* tile_counter) {
    reduce_by_key_body<u64, u64>(keys, vals, uniq, sums, n, runs, status, tile_counter);
}

// run_length_encode_u32: uniq[r], counts[r] = the key and the length of the
// r-th run of equal consecutive keys; runs[0] = the number of runs.
// Reduce-by-key of implicit ones; thread mapping and invariant as above.
extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)
run_length_encode_u32(const u32* keys, u32* uniq, u32* counts, u64 n, u32* runs, u64* status,
                      u32* tile_counter) {
    reduce_by_key_body<u32, u32>(keys, nullptr, uniq, counts, n, runs, status, tile_counter);
}

// run_length_encode_u64: as run_length_encode_u32 for 64-bit keys.
extern "C" __global__ void __launch_bounds__(SELECT_BLOCK)
run_length_encode_u64(const u64* keys, u64* uniq, u32* counts, u64 n, u32* runs, u64* status,
                      u32* tile_counter) {
    reduce_by_key_body<u64, u32>(keys, nullptr, uniq, counts, n, runs, status, tile_counter);
}
