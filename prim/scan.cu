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
// Keep scan.cu and select.cu's look-back machinery in step: each .cu file is
// compiled on its own, so select.cu carries a copy.
typedef unsigned int u32;
typedef unsigned long long u64;

// Launch configuration, mirrored by scanBlock, scanRounds and scanVecBytes in
// scan_gpu.go: keep them equal.
#define SCAN_BLOCK 256
#define SCAN_ROUNDS 8
#define SCAN_VEC_BYTES 16

#define WARP 32
#define FULL_MASK 0xffffffffu
#define SCAN_WARPS (SCAN_BLOCK / WARP)

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

// ---- warp shuffles of the scanned types ----

__device__ __forceinline__ u32 shfl_up(u32 v, int d) { return __shfl_up_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u64 shfl_up(u64 v, int d) { return __shfl_up_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u32 shfl_down(u32 v, int d) { return __shfl_down_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u64 shfl_down(u64 v, int d) { return __shfl_down_sync(FULL_MASK, v, d); }
__device__ __forceinline__ u32 shfl_idx(u32 v, int l) { return __shfl_sync(FULL_MASK, v, l); }
__device__ __forceinline__ u64 shfl_idx(u64 v, int l) { return __shfl_sync(FULL_MASK, v, l); }

// Sum is the scan operator: addition modulo 2^bits, identity 0.
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
    T warp_total[SCAN_WARPS];
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
    for (int w = 0; w < SCAN_WARPS; ++w) {
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

// scan_body is the whole kernel for one element type and kind of scan.
template <typename T, bool INCLUSIVE, class State>
__device__ __forceinline__ void scan_body(const T* in, T* out, u64 n, const State& st, u32* tile_counter) {
    constexpr int V = SCAN_VEC_BYTES / sizeof(T);
    constexpr u64 WARP_ITEMS = (u64)WARP * SCAN_ROUNDS * V;
    constexpr u64 TILE_ITEMS = (u64)SCAN_BLOCK * SCAN_ROUNDS * V;
    __shared__ TileShared<T> sh;

    if (threadIdx.x == 0) sh.tile = atomicAdd(tile_counter, 1u);
    __syncthreads();
    const u32 tile = sh.tile;
    const int lane = threadIdx.x % WARP;
    const u64 tile_start = (u64)tile * TILE_ITEMS;
    const u64 warp_start = tile_start + (threadIdx.x / WARP) * WARP_ITEMS;
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

// scan_exclusive_u32: out[i] = in[0] + ... + in[i-1] (mod 2^32).
// Thread mapping: one block per tile of SCAN_BLOCK*SCAN_ROUNDS*4 items, tile
// index from *tile_counter; each thread holds SCAN_ROUNDS vectors of 4 items
// (layout at the top of the file). Invariant: status[t] goes 0 -> aggregate
// -> inclusive prefix of tiles 0..t, each value final when published.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
scan_exclusive_u32(const u32* in, u32* out, u64 n, u64* status, u32* tile_counter) {
    scan_body<u32, false>(in, out, n, TileStatus<u32>{status}, tile_counter);
}

// scan_inclusive_u32: out[i] = in[0] + ... + in[i] (mod 2^32).
// Thread mapping and invariant as scan_exclusive_u32.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
scan_inclusive_u32(const u32* in, u32* out, u64 n, u64* status, u32* tile_counter) {
    scan_body<u32, true>(in, out, n, TileStatus<u32>{status}, tile_counter);
}

// scan_exclusive_u64: out[i] = in[0] + ... + in[i-1] (mod 2^64).
// Thread mapping: as scan_exclusive_u32 with vectors of 2 items. Invariant:
// both status words of tile t go 0 -> aggregate -> inclusive prefix of tiles
// 0..t, each half final when published.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
scan_exclusive_u64(const u64* in, u64* out, u64 n, u64* status, u32* tile_counter) {
    scan_body<u64, false>(in, out, n, TileStatus<u64>{status}, tile_counter);
}

// scan_inclusive_u64: out[i] = in[0] + ... + in[i] (mod 2^64).
// Thread mapping and invariant as scan_exclusive_u64.
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK)
scan_inclusive_u64(const u64* in, u64* out, u64 n, u64* status, u32* tile_counter) {
    scan_body<u64, true>(in, out, n, TileStatus<u64>{status}, tile_counter);
}
