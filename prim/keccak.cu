// keccak.cu: batched Keccak-256 (Ethereum's legacy Keccak: padding byte
// 0x01 ... 0x80, rate 136 bytes, 32-byte digest), one digest per message.
//
// Message i is data[offsets[i] .. offsets[i+1]). Messages start at any byte
// address, so both kernels read the aligned 32-bit words that hold message
// bytes and realign them with funnel shifts. A word is read only when it
// holds at least one byte of the message, and its other bytes are masked
// off. An aligned word never straddles a page, so every read is of mapped
// memory, but it may touch up to 3 bytes past the end of a buffer whose
// size is not a multiple of 4 (compute-sanitizer's memcheck would report
// those; prim.Keccak256 rounds its uploads up to 8 bytes).
//
// Two kernels, picked by the Go launcher (keccak_gpu.go):
//   keccak256_thread: one thread per message, state in 25 registers; the
//                     fast path for many short messages;
//   keccak256_warp:   one warp per message, lane t < 25 holding state lane t;
//                     for few long messages.
#include "warpkv/keccak.cuh"

// Launch constants, passed from keccak_gpu.go as -D options: KECCAK_RATE
// (keccakRate: bytes absorbed per permutation), KECCAK_THREAD_BLOCK
// (keccakThreadBlock: threads per block of keccak256_thread),
// KECCAK_WARP_BLOCK (keccakWarpBlock: threads per block of keccak256_warp)
// and WARP_SIZE (keccakWarpSize: threads per message of keccak256_warp).
#if !defined(KECCAK_RATE) || !defined(KECCAK_THREAD_BLOCK) || !defined(KECCAK_WARP_BLOCK) || !defined(WARP_SIZE)
#error "KECCAK_RATE, KECCAK_THREAD_BLOCK, KECCAK_WARP_BLOCK and WARP_SIZE are passed from keccak_gpu.go"
#endif

// Rounds per trip of keccak256_warp's round loop (keccak_f1600_warp's
// UNROLL): unrolling all 24 makes the compiler hoist the 24 round constants
// into registers, and spill.
#define KECCAK_WARP_ROUND_UNROLL 4

#define KECCAK_RATE_LANES (KECCAK_RATE / 8) // 17 state lanes absorb data
#define KECCAK_RATE_WORDS (KECCAK_RATE / 4) // 34 aligned words per block

// message_lane returns state lane k's share of the current block: the
// little-endian bytes [8k, 8k+8) of the block, keeping only the first rem
// bytes of the block (rem may exceed the rate), with the padding 0x01 at
// block byte rem and 0x80 at byte 135 when final. w0, w1, w2 are the
// aligned words 2k, 2k+1, 2k+2 of the block (zero where not loaded) and sh
// is 8 times the block's byte misalignment.
__device__ __forceinline__ u64 message_lane(u32 w0, u32 w1, u32 w2, u32 sh, int k, u32 rem, bool final) {
    u64 v = join64(__funnelshift_r(w0, w1, sh), __funnelshift_r(w1, w2, sh));
    const int m = (int)min(rem, (u32)KECCAK_RATE) - 8 * k; // message bytes in this lane, if in [0, 8)
    if (m < 8) {
        v = m <= 0 ? 0 : v & ((1ull << (8 * m)) - 1);
        if (m >= 0)
            v ^= 1ull << (8 * m);
    }
    if (final && k == KECCAK_RATE_LANES - 1)
        v ^= 0x80ull << 56;
    return v;
}

// word_limit returns the bound such that aligned word j of a block (whose
// first message byte is s bytes into word 0) holds message bytes iff
// 4j < bound, for rem message bytes left from the block's start.
__device__ __forceinline__ u32 word_limit(u32 s, u32 rem) {
    const u32 r = min(rem, (u32)KECCAK_RATE + 8);
    return r == 0 ? 0 : s + r;
}

// message_range returns message i's byte range, clamped into [0, data_len]
// so that malformed offsets give wrong digests but never bad reads.
__device__ __forceinline__ void message_range(const u32* __restrict__ offsets, u64 i, u64 data_len,
                                              u32& begin, u32& len) {
    const u64 b = min((u64)offsets[i], data_len);
    const u64 e = min(max((u64)offsets[i + 1], b), data_len);
    begin = (u32)b;
    len = (u32)(e - b);
}

// keccak256_thread: out[i] = Keccak-256(data[offsets[i] .. offsets[i+1]))
// for i < n.
// Thread mapping: one thread per message (thread i of the grid hashes
// message i); the 25-lane state lives in registers. Each loop iteration
// absorbs one 136-byte block (the last one padded) and permutes.
// Invariant: at the top of the loop, w points at the aligned word holding
// the first unabsorbed message byte, which sits sh/8 bytes into it, and
// rem message bytes are left; the digest is written as two 16-byte stores.
extern "C" __global__ void __launch_bounds__(KECCAK_THREAD_BLOCK)
keccak256_thread(const u8* __restrict__ data, const u32* __restrict__ offsets, u64 n, u64 data_len,
                 uint4* __restrict__ out) {
    const u64 i = (u64)blockIdx.x * KECCAK_THREAD_BLOCK + threadIdx.x;
    if (i >= n)
        return;
    u32 begin, rem;
    message_range(offsets, i, data_len, begin, rem);
    const u64 addr = (u64)(data + begin);
    const u32* __restrict__ w = (const u32*)(addr & ~3ull);
    const u32 s = (u32)addr & 3;
    const u32 sh = 8 * s;

    u64 a[KECCAK_LANES];
#pragma unroll
    for (int k = 0; k < KECCAK_LANES; ++k)
        a[k] = 0;
    for (;;) {
        const bool final = rem < KECCAK_RATE;
        const u32 limit = word_limit(s, rem);
        u32 wv[KECCAK_RATE_WORDS + 1];
#pragma unroll
        for (int j = 0; j <= KECCAK_RATE_WORDS; ++j)
            wv[j] = 4 * j < limit ? __ldg(w + j) : 0;
#pragma unroll
        for (int k = 0; k < KECCAK_RATE_LANES; ++k)
            a[k] ^= message_lane(wv[2 * k], wv[2 * k + 1], wv[2 * k + 2], sh, k, rem, final);
        keccak_f1600(a);
        if (final)
            break;
        rem -= KECCAK_RATE;
        w += KECCAK_RATE_WORDS;
    }
    out[2 * i] = make_uint4(lo32(a[0]), hi32(a[0]), lo32(a[1]), hi32(a[1]));
    out[2 * i + 1] = make_uint4(lo32(a[2]), hi32(a[2]), lo32(a[3]), hi32(a[3]));
}

// keccak256_warp: out[i] = Keccak-256(data[offsets[i] .. offsets[i+1]))
// for i < n, like keccak256_thread.
// Thread mapping: one warp per message (warp i of the grid hashes message
// i). Lane t < 25 holds state lane t = x + 5y; lanes 25..31 only take part
// in the shuffles. Each loop iteration loads one 136-byte block (lane t < 17
// reads the three aligned words under its 8 bytes, coalesced), absorbs it
// and permutes with keccak.cuh's keccak_f1600_warp (theta, pi and chi read
// other lanes through __shfl_sync, from source lanes computed once).
// Invariant: every lane holds the same rem and w (the loop is warp-uniform);
// lane t < 25 holds state lane t after each permutation; lanes 0..3 store
// the digest's four 8-byte words, one coalesced 32-byte store.
extern "C" __global__ void __launch_bounds__(KECCAK_WARP_BLOCK)
keccak256_warp(const u8* __restrict__ data, const u32* __restrict__ offsets, u64 n, u64 data_len,
               u64* __restrict__ out) {
    const u64 i = ((u64)blockIdx.x * KECCAK_WARP_BLOCK + threadIdx.x) / WARP_SIZE;
    // A warp past the last message hashes an empty one and stores nothing:
    // no lane exits early, so the shuffles see a converged warp.
    const bool valid = i < n; // the same for the whole warp
    const int t = threadIdx.x % WARP_SIZE;
    const KeccakWarpLane lane = keccak_warp_lane(t); // shuffle sources, computed once

    u32 begin = 0, rem = 0;
    if (valid)
        message_range(offsets, i, data_len, begin, rem);
    const u64 addr = (u64)(data + begin);
    const u32* __restrict__ w = (const u32*)(addr & ~3ull);
    const u32 s = (u32)addr & 3;
    const u32 sh = 8 * s;

    u64 a = 0;
    for (;;) {
        const bool final = rem < KECCAK_RATE;
        {
            // Branch-free: lanes past the rate load nothing and absorb zero.
            const bool absorbs = t < KECCAK_RATE_LANES;
            const u32 limit = absorbs ? word_limit(s, rem) : 0;
            const int j = 2 * t;
            const u32 w0 = 4 * j < limit ? __ldg(w + j) : 0;
            const u32 w1 = 4 * (j + 1) < limit ? __ldg(w + j + 1) : 0;
            const u32 w2 = 4 * (j + 2) < limit ? __ldg(w + j + 2) : 0;
            const u64 v = message_lane(w0, w1, w2, sh, t, rem, final);
            a ^= absorbs ? v : 0;
        }
        keccak_f1600_warp<KECCAK_WARP_ROUND_UNROLL>(a, lane);
        if (final)
            break;
        rem -= KECCAK_RATE;
        w += KECCAK_RATE_WORDS;
    }
    if (valid && t < 4)
        out[4 * i + t] = a;
}
