// sort.cu: device-wide stable LSD radix sort of 32- or 64-bit keys,
// optionally carrying 32- or 64-bit values, by 8-bit digits
// (reduce-then-scan). The launcher in sort_gpu.go queues, for one sort:
//
//   radix_histogram_*  one read of the keys: digit counts of every pass
//   radix_plan         which passes are no-ops (one digit for all keys),
//                      which buffer each pass reads, digit bases
//   per pass p:
//     radix_upsweep_*    per-block digit counts -> counts[digit][block]
//     radix_scan         exclusive scan of counts (digit-major)
//     radix_downsweep_*  stable rank within tiles, scatter to the output
//   radix_copy_back    result back into the caller's buffer when the number
//                      of executed passes is odd
//
// Passes alternate between the caller's buffers (A) and scratch (B). Which
// passes run depends on the data, so the choice is made on the device: every
// per-pass kernel reads the plan and returns at once for a no-op pass, and
// reads from A or B as the plan says. No host synchronization is needed.
//
// The up- and downsweep of a pass split the tiles of TILE_ITEMS keys the same
// way: block b of a grid of G blocks owns tiles [tiles*b/G, tiles*(b+1)/G),
// processed in order, so the counts and the scatter agree and the sort is
// stable. Element counts fit in 32 bits (n < 2^32, checked by the launcher).
#include "warpkv/types.cuh"

// Launch configuration, passed from sort_gpu.go as -D options: RADIX_BITS
// (radixBits), RADIX_DIGITS (radixDigits), BLOCK_THREADS
// (radixBlockThreads), ITEMS_PER_THREAD (radixItemsPerThread),
// SCAN_THREADS (radixScanThreads), MAX_PASSES (radixMaxPasses) and
// PLAN_WORDS (radixPlanWords, the size of the plan below).
#if !defined(RADIX_BITS) || !defined(RADIX_DIGITS) || !defined(BLOCK_THREADS) || !defined(ITEMS_PER_THREAD) || \
    !defined(SCAN_THREADS) || !defined(MAX_PASSES) || !defined(PLAN_WORDS)
#error "the radix sort's launch configuration is passed from sort_gpu.go"
#endif

#define WARP_THREADS WARP
#define BLOCK_WARPS (BLOCK_THREADS / WARP_THREADS)
#define TILE_ITEMS (BLOCK_THREADS * ITEMS_PER_THREAD)
#define WARP_ITEMS (WARP_THREADS * ITEMS_PER_THREAD)
// The digit given to the padding of a partial last tile: it sorts after
// every real digit, so the padding ranks last in the tile and is not written.
#define SENTINEL_DIGIT (RADIX_DIGITS - 1)

// The plan, radix_plan's output, as u32 words:
//   [PLAN_DIGIT_BASE + p*RADIX_DIGITS + d]  keys of pass p with digit < d
//   [PLAN_ACTIVE + p]                       1 if pass p must run
//   [PLAN_SRC + p]                          1 if pass p reads B (else A)
//   [PLAN_FINAL]                            1 if the result ends in B
#define PLAN_DIGIT_BASE 0
#define PLAN_ACTIVE (MAX_PASSES * RADIX_DIGITS)
#define PLAN_SRC (PLAN_ACTIVE + MAX_PASSES)
#define PLAN_FINAL (PLAN_SRC + MAX_PASSES)

static_assert(PLAN_WORDS == PLAN_FINAL + 1, "plan layout");

static_assert(BLOCK_THREADS == RADIX_DIGITS, "thread d owns digit d in the per-digit steps");
static_assert(BLOCK_THREADS % WARP_THREADS == 0 && SCAN_THREADS % WARP_THREADS == 0, "whole warps");
static_assert(MAX_PASSES * RADIX_BITS == 64, "passes of the widest key");

// block_exclusive_scan returns the exclusive prefix sum of v over the NT
// threads of the block (in thread order) and stores the block total in
// *total. Every thread of the block must call it. warp_sums is shared
// scratch of NT/32 words; the leading barrier makes repeated calls safe.
template <int NT>
__device__ __forceinline__ u32 block_exclusive_scan(u32 v, u32* warp_sums, u32* total) {
    const u32 lane = threadIdx.x % WARP_THREADS, warp = threadIdx.x / WARP_THREADS;
    u32 x = v;
#pragma unroll
    for (int o = 1; o < WARP_THREADS; o <<= 1) {
        u32 y = __shfl_up_sync(FULL_MASK, x, o);
        if (lane >= (u32)o) x += y;
    }
    __syncthreads();  // earlier readers of warp_sums are done
    if (lane == WARP_THREADS - 1) warp_sums[warp] = x;
    __syncthreads();
    u32 before = 0, all = 0;
#pragma unroll
    for (u32 w = 0; w < NT / WARP_THREADS; ++w) {
        u32 s = warp_sums[w];
        if (w < warp) before += s;
        all += s;
    }
    *total = all;
    return before + x - v;
}

// pass_mask returns the digit mask of the pass starting at bit shift of the
// range [.., end_bit): 8 bits, fewer for a last partial digit.
__device__ __forceinline__ u32 pass_mask(u32 shift, u32 end_bit) {
    u32 bits = end_bit - shift < RADIX_BITS ? end_bit - shift : RADIX_BITS;
    return (1u << bits) - 1u;
}

// first_tile returns the first tile owned by block b of the grid (block
// gridDim.x owns none: it is the end of the last block's range).
__device__ __forceinline__ u32 first_tile(u32 b, u32 tiles) {
    return (u32)((u64)tiles * b / gridDim.x);
}

// tile_valid returns how many of the TILE_ITEMS slots of a tile hold keys.
__device__ __forceinline__ u32 tile_valid(u32 tile, u32 n) {
    u32 left = n - tile * (u32)TILE_ITEMS;  // tile < tiles, so no wrap
    return left < TILE_ITEMS ? left : TILE_ITEMS;
}

// ---------------------------------------------------------------------------
// radix_histogram_k32/k64: hist[p][d] += number of keys whose digit in pass
// p (bits [begin_bit+8p, min(begin_bit+8p+8, end_bit))) is d, p < passes.
// hist must be zero on entry.
// Thread mapping: 256-thread blocks, grid-stride over tiles; each thread
// loads ITEMS_PER_THREAD keys of a tile (block-striped, coalesced), counts
// them into a block histogram in shared memory, and the block adds its
// non-zero bins to hist with global atomics.
// Invariant: every key in [0, n) is counted once in every pass. Each thread
// keeps a run (digit, length) per pass and flushes it with one shared atomic
// when the digit changes, so constant or sorted digits cost no contention.
// load_tile_keys reads tile `tile` of the n keys into registers, blocked by
// thread (item j of the thread at j * BLOCK_THREADS + threadIdx.x), and
// returns the tile's valid count (tile_valid); entries past it are left
// unset. The histogram and upsweep kernels load their tiles with it.
template <typename K>
__device__ __forceinline__ u32 load_tile_keys(const K* keys, u32 tile, u32 n, K (&k)[ITEMS_PER_THREAD]) {
    const K* in = keys + (u64)tile * TILE_ITEMS;
    const u32 valid = tile_valid(tile, n);
#pragma unroll
    for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
        u32 l = j * BLOCK_THREADS + threadIdx.x;
        if (l < valid) k[j] = in[l];
    }
    return valid;
}

template <typename K, int MAXP>
__device__ void histogram(const K* __restrict__ keys, u32 n, u32 tiles, u32* __restrict__ hist,
                          u32 begin_bit, u32 end_bit, u32 passes) {
    __shared__ u32 h[MAXP * RADIX_DIGITS];
    for (u32 i = threadIdx.x; i < MAXP * RADIX_DIGITS; i += BLOCK_THREADS) h[i] = 0;
    __syncthreads();

    u32 shift[MAXP], mask[MAXP], run_digit[MAXP], run_len[MAXP];
#pragma unroll
    for (int p = 0; p < MAXP; ++p) {
        shift[p] = begin_bit + p * RADIX_BITS;
        mask[p] = (u32)p < passes ? pass_mask(shift[p], end_bit) : 0;
        run_digit[p] = 0;
        run_len[p] = 0;
    }
    for (u32 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        K k[ITEMS_PER_THREAD];
        const u32 valid = load_tile_keys(keys, tile, n, k);
#pragma unroll
        for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
            if (j * BLOCK_THREADS + threadIdx.x >= valid) break;
#pragma unroll
            for (int p = 0; p < MAXP; ++p) {
                if ((u32)p >= passes) break;
                u32 d = (u32)(k[j] >> shift[p]) & mask[p];
                if (d == run_digit[p]) {
                    ++run_len[p];
                } else {
                    if (run_len[p]) atomicAdd(&h[p * RADIX_DIGITS + run_digit[p]], run_len[p]);
                    run_digit[p] = d;
                    run_len[p] = 1;
                }
            }
        }
    }
#pragma unroll
    for (int p = 0; p < MAXP; ++p)
        if (run_len[p]) atomicAdd(&h[p * RADIX_DIGITS + run_digit[p]], run_len[p]);
    __syncthreads();
    for (u32 i = threadIdx.x; i < passes * RADIX_DIGITS; i += BLOCK_THREADS)
        if (h[i]) atomicAdd(&hist[i], h[i]);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
radix_histogram_k32(const u32* keys, u32 n, u32 tiles, u32* hist, u32 begin_bit, u32 end_bit, u32 passes) {
    histogram<u32, 4>(keys, n, tiles, hist, begin_bit, end_bit, passes);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
radix_histogram_k64(const u64* keys, u32 n, u32 tiles, u32* hist, u32 begin_bit, u32 end_bit, u32 passes) {
    histogram<u64, 8>(keys, n, tiles, hist, begin_bit, end_bit, passes);
}

// ---------------------------------------------------------------------------
// radix_plan: from the histogram of every pass, writes the plan (see
// PLAN_*): a pass is a no-op when one digit holds all n keys; the executed
// passes alternate A->B, B->A, ...; the digit bases are the exclusive scan of
// each pass's histogram.
// Thread mapping: one block of RADIX_DIGITS threads, thread d owns digit d.
// Invariant: PLAN_SRC of an executed pass is the parity of the executed
// passes before it, and PLAN_FINAL the parity of all of them.
extern "C" __global__ void __launch_bounds__(RADIX_DIGITS)
radix_plan(const u32* hist, u32* plan, u32 n, u32 passes) {
    __shared__ u32 warp_sums[RADIX_DIGITS / WARP_THREADS];
    const u32 d = threadIdx.x;
    u32 parity = 0;
    for (u32 p = 0; p < passes; ++p) {
        u32 v = hist[p * RADIX_DIGITS + d], total;
        plan[PLAN_DIGIT_BASE + p * RADIX_DIGITS + d] = block_exclusive_scan<RADIX_DIGITS>(v, warp_sums, &total);
        bool noop = __syncthreads_or(v == n);
        if (d == 0) {
            plan[PLAN_ACTIVE + p] = noop ? 0 : 1;
            plan[PLAN_SRC + p] = parity;
        }
        if (!noop) parity ^= 1;
    }
    if (d == 0) plan[PLAN_FINAL] = parity;
}

// ---------------------------------------------------------------------------
// radix_upsweep_k32/k64: counts[d*G + b] = number of keys with digit d
// ((key >> shift) & mask) in the tiles of block b, for pass `pass`, reading
// the buffer the plan names. Returns at once for a no-op pass.
// Thread mapping: G blocks of BLOCK_THREADS; block b walks its tiles in
// order, each thread loading ITEMS_PER_THREAD keys per tile (block-striped,
// coalesced) and counting them into a shared histogram (runs of one digit
// are flushed with one atomic, as in the histogram kernel).
// Invariant: the tile partition is the downsweep's, so counts[d*G + b] is
// exactly the number of keys block b scatters with digit d.
// The run counting below is the histogram kernel's for one pass. It is not
// factored into a shared helper: doing so changes the generated code
// (checked with NVRTC 11.8, sm_90), and this loop is the measured one.
template <typename K>
__device__ void upsweep(const K* keys_a, const K* keys_b, u32* __restrict__ counts, const u32* __restrict__ plan,
                        u32 n, u32 tiles, u32 shift, u32 mask, u32 pass) {
    if (!plan[PLAN_ACTIVE + pass]) return;
    const K* __restrict__ keys = plan[PLAN_SRC + pass] ? keys_b : keys_a;
    __shared__ u32 h[RADIX_DIGITS];
    h[threadIdx.x] = 0;
    __syncthreads();
    u32 run_digit = 0, run_len = 0;
    const u32 t1 = first_tile(blockIdx.x + 1, tiles);
    for (u32 tile = first_tile(blockIdx.x, tiles); tile < t1; ++tile) {
        K k[ITEMS_PER_THREAD];
        const u32 valid = load_tile_keys(keys, tile, n, k);
#pragma unroll
        for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
            if (j * BLOCK_THREADS + threadIdx.x >= valid) break;
            u32 d = (u32)(k[j] >> shift) & mask;
            if (d == run_digit) {
                ++run_len;
            } else {
                if (run_len) atomicAdd(&h[run_digit], run_len);
                run_digit = d;
                run_len = 1;
            }
        }
    }
    if (run_len) atomicAdd(&h[run_digit], run_len);
    __syncthreads();
    counts[threadIdx.x * gridDim.x + blockIdx.x] = h[threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
radix_upsweep_k32(const u32* keys_a, const u32* keys_b, u32* counts, const u32* plan, u32 n, u32 tiles,
                  u32 shift, u32 mask, u32 pass) {
    upsweep<u32>(keys_a, keys_b, counts, plan, n, tiles, shift, mask, pass);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
radix_upsweep_k64(const u64* keys_a, const u64* keys_b, u32* counts, const u32* plan, u32 n, u32 tiles,
                  u32 shift, u32 mask, u32 pass) {
    upsweep<u64>(keys_a, keys_b, counts, plan, n, tiles, shift, mask, pass);
}

// ---------------------------------------------------------------------------
// radix_scan: counts[d*G + b] = PLAN_DIGIT_BASE[pass][d] + sum of
// counts[d*G + b'] for b' < b: the output offset of block b's first key with
// digit d. Returns at once for a no-op pass.
// Thread mapping: one block of SCAN_THREADS per digit d, walking the G counts
// of its digit in chunks of SCAN_THREADS with a running carry.
// Invariant: digit-major order with the digit bases equals the exclusive
// scan of the whole digit-major array.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
radix_scan(u32* counts, const u32* plan, u32 blocks, u32 pass) {
    if (!plan[PLAN_ACTIVE + pass]) return;
    __shared__ u32 warp_sums[SCAN_THREADS / WARP_THREADS];
    const u32 d = blockIdx.x;
    u32* c = counts + (u64)d * blocks;
    u32 carry = plan[PLAN_DIGIT_BASE + pass * RADIX_DIGITS + d];
    for (u32 base = 0; base < blocks; base += SCAN_THREADS) {
        u32 i = base + threadIdx.x;
        u32 v = i < blocks ? c[i] : 0, total;
        u32 ex = block_exclusive_scan<SCAN_THREADS>(v, warp_sums, &total);
        if (i < blocks) c[i] = carry + ex;
        carry += total;
    }
}

// ---------------------------------------------------------------------------
// radix_downsweep_*: one pass of the sort: moves every key (and value) of
// the buffer the plan names to its stable position by digit
// ((key >> shift) & mask) in the other buffer. Returns at once for a no-op
// pass.
// Thread mapping: G blocks of BLOCK_THREADS (8 warps); block b walks its
// tiles in order. Per tile, warp w loads WARP_ITEMS keys warp-striped: item j
// of lane l is tile slot w*WARP_ITEMS + j*32 + l, so input order is
// (warp, item, lane). Ranking: per-warp digit counters in shared memory; for
// item j the lanes with equal digits (__match_any_sync) all read the
// counter, the lowest of them adds their number, and each takes the counter
// plus its rank among them. Thread d then turns the counters of digit d into
// exclusive prefixes over warps, a block scan over the 256 digit totals gives
// each digit's start in the tile, and the keys are scattered into shared
// memory in digit order. They leave coalesced: sorted slot i with digit d
// goes to global_base[d] + i, where global_base[d] = (running offset of
// digit d for this block) - (start of d in the tile). The values follow the
// same permutation through the same shared buffer.
// Invariant: within a tile the shared order is stable (digit, warp, item,
// lane); tiles of a block are taken in order and blocks own consecutive
// tiles, and counts holds the scanned offsets of radix_scan, so the output is
// the stable sort by this digit. Padding slots of the last tile get
// SENTINEL_DIGIT and the last slots of the input order, so they rank after
// every key and are not written.
template <typename K, typename V, bool HAS_VALS>
__device__ void downsweep(K* keys_a, K* keys_b, V* vals_a, V* vals_b, const u32* __restrict__ counts,
                          const u32* __restrict__ plan, u32 n, u32 tiles, u32 shift, u32 mask, u32 pass) {
    if (!plan[PLAN_ACTIVE + pass]) return;
    const bool from_b = plan[PLAN_SRC + pass] != 0;
    const K* __restrict__ key_in = from_b ? keys_b : keys_a;
    K* __restrict__ key_out = from_b ? keys_a : keys_b;
    const V* __restrict__ val_in = from_b ? vals_b : vals_a;
    V* __restrict__ val_out = from_b ? vals_a : vals_b;

    constexpr int EXCH_BYTES = (HAS_VALS && sizeof(V) > sizeof(K)) ? sizeof(V) : sizeof(K);
    __shared__ __align__(16) unsigned char exchange[TILE_ITEMS * EXCH_BYTES];
    __shared__ u32 warp_digit[BLOCK_WARPS][RADIX_DIGITS];
    __shared__ u32 global_base[RADIX_DIGITS];
    __shared__ u32 warp_sums[BLOCK_WARPS];
    K* skeys = reinterpret_cast<K*>(exchange);
    V* svals = reinterpret_cast<V*>(exchange);

    const u32 tid = threadIdx.x, lane = tid % WARP_THREADS, warp = tid / WARP_THREADS;
    const u32 lanes_below = (1u << lane) - 1u;
    u32* my_counts = warp_digit[warp];
    // Thread tid owns digit tid: the output offset of this block's next key
    // with that digit.
    u32 run_offset = counts[tid * gridDim.x + blockIdx.x];

    const u32 t1 = first_tile(blockIdx.x + 1, tiles);
    for (u32 tile = first_tile(blockIdx.x, tiles); tile < t1; ++tile) {
        const u64 tile_start = (u64)tile * TILE_ITEMS;
        const u32 valid = tile_valid(tile, n);
        const u32 warp_slot = warp * WARP_ITEMS + lane;

        K key[ITEMS_PER_THREAD];
        u32 digit[ITEMS_PER_THREAD];
#pragma unroll
        for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
            u32 l = warp_slot + j * WARP_THREADS;
            if (l < valid) key[j] = key_in[tile_start + l];
        }
#pragma unroll
        for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
            u32 l = warp_slot + j * WARP_THREADS;
            digit[j] = l < valid ? (u32)(key[j] >> shift) & mask : SENTINEL_DIGIT;
        }

        __syncthreads();  // the previous tile is done with shared memory
        for (u32 i = lane; i < RADIX_DIGITS; i += WARP_THREADS) my_counts[i] = 0;
        __syncwarp();

        // Rank within the warp: pos[j] = earlier items of the warp with the
        // same digit.
        u32 pos[ITEMS_PER_THREAD];
#pragma unroll
        for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
            const u32 peers = __match_any_sync(FULL_MASK, digit[j]);
            const u32 before = my_counts[digit[j]];
            __syncwarp();
            if ((peers & lanes_below) == 0) my_counts[digit[j]] = before + __popc(peers);
            __syncwarp();
            pos[j] = before + __popc(peers & lanes_below);
        }
        __syncthreads();

        // Thread tid = digit d: prefixes over warps, then over digits.
        u32 digit_total = 0;
#pragma unroll
        for (int w = 0; w < BLOCK_WARPS; ++w) {
            u32 c = warp_digit[w][tid];
            warp_digit[w][tid] = digit_total;
            digit_total += c;
        }
        u32 tile_total;
        const u32 digit_start = block_exclusive_scan<BLOCK_THREADS>(digit_total, warp_sums, &tile_total);
#pragma unroll
        for (int w = 0; w < BLOCK_WARPS; ++w) warp_digit[w][tid] += digit_start;
        global_base[tid] = run_offset - digit_start;  // wraps; + slot >= digit_start is exact
        run_offset += digit_total;
        __syncthreads();

#pragma unroll
        for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
            pos[j] += my_counts[digit[j]];
            skeys[pos[j]] = key[j];
        }
        V val[HAS_VALS ? ITEMS_PER_THREAD : 1];
        if (HAS_VALS) {
#pragma unroll
            for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
                u32 l = warp_slot + j * WARP_THREADS;
                if (l < valid) val[j] = val_in[tile_start + l];
            }
        }
        __syncthreads();

        u32 dst[ITEMS_PER_THREAD];
#pragma unroll
        for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
            u32 i = j * BLOCK_THREADS + tid;
            if (i < valid) {
                K k = skeys[i];
                dst[j] = global_base[(u32)(k >> shift) & mask] + i;
                key_out[dst[j]] = k;
            }
        }
        if (HAS_VALS) {
            __syncthreads();  // keys read out of the exchange buffer
#pragma unroll
            for (int j = 0; j < ITEMS_PER_THREAD; ++j)
                if (pos[j] < valid) svals[pos[j]] = val[j];
            __syncthreads();
#pragma unroll
            for (int j = 0; j < ITEMS_PER_THREAD; ++j) {
                u32 i = j * BLOCK_THREADS + tid;
                if (i < valid) val_out[dst[j]] = svals[i];
            }
        }
    }
}

#define DOWNSWEEP_KEYS(NAME, K)                                                                             \
    extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)                                            \
    NAME(K* keys_a, K* keys_b, const u32* counts, const u32* plan, u32 n, u32 tiles, u32 shift, u32 mask, \
         u32 pass) {                                                                                        \
        downsweep<K, K, false>(keys_a, keys_b, (K*)0, (K*)0, counts, plan, n, tiles, shift, mask, pass);   \
    }
#define DOWNSWEEP_PAIRS(NAME, K, V)                                                                          \
    extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)                                             \
    NAME(K* keys_a, K* keys_b, V* vals_a, V* vals_b, const u32* counts, const u32* plan, u32 n, u32 tiles, \
         u32 shift, u32 mask, u32 pass) {                                                                    \
        downsweep<K, V, true>(keys_a, keys_b, vals_a, vals_b, counts, plan, n, tiles, shift, mask, pass);   \
    }

// The instantiations: keys of 32 or 64 bits, alone or with 32- or 64-bit
// values (see downsweep above for mapping and invariant).
DOWNSWEEP_KEYS(radix_downsweep_k32, u32)
DOWNSWEEP_KEYS(radix_downsweep_k64, u64)
DOWNSWEEP_PAIRS(radix_downsweep_k32_v32, u32, u32)
DOWNSWEEP_PAIRS(radix_downsweep_k32_v64, u32, u64)
DOWNSWEEP_PAIRS(radix_downsweep_k64_v32, u64, u32)
DOWNSWEEP_PAIRS(radix_downsweep_k64_v64, u64, u64)

// ---------------------------------------------------------------------------
// radix_copy_back: dst[i] = src[i] for i < words when the plan says the
// result ended in the scratch buffer (an odd number of executed passes);
// otherwise returns at once.
// Thread mapping: one thread per 32-bit word, grid-stride loop.
// Invariant: every word in [0, words) is copied once, or none is.
extern "C" __global__ void radix_copy_back(u32* __restrict__ dst, const u32* __restrict__ src, u64 words,
                                           const u32* plan) {
    if (!plan[PLAN_FINAL]) return;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < words; i += (u64)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
