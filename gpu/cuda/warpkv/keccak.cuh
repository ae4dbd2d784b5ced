// warpkv/keccak.cuh: the Keccak-f[1600] permutation, shared by every kernel
// that hashes with Keccak (prim's keccak.cu; mpt's hashing phase).
//
// Interface (all __device__, state lanes indexed x + 5y, little-endian):
//   KECCAK_LANES, KECCAK_ROUNDS   25 state lanes of 64 bits, 24 rounds;
//   keccak_rc[KECCAK_ROUNDS]      the round constants of iota (__constant__);
//   keccak_rho[KECCAK_LANES]      the rotation offsets of rho, by lane
//                                 (__constant__; for per-lane rotations);
//   keccak_f1600<U>(u64 (&a)[25]) the permutation on a state held in one
//                                 thread's registers, its 24 rounds unrolled
//                                 U at a time (U divides 24; default 24:
//                                 fully unrolled, the round constants
//                                 immediates; 1: a loop of one round, about
//                                 a quarter of the code, for kernels whose
//                                 other code competes for the instruction
//                                 cache);
//   rotl64<N>(v), rotl64_var(v, n)  64-bit rotations by a compile-time N
//                                 (0 < N < 64) or a run-time n in [0, 64),
//                                 as funnel shifts of the 32-bit halves;
//   shfl64(v, src)                v from lane src of the warp (all lanes
//                                 take part);
//   KeccakWarpLane, keccak_warp_lane(t), keccak_f1600_warp<U>(a, s)
//                                 the warp-cooperative permutation: lane
//                                 t < 25 holds state lane t in a, s its
//                                 shuffle sources (computed once per
//                                 kernel), rounds unrolled U at a time (0:
//                                 the compiler's choice, no pragma);
//   lo32, hi32, join64            halves of a 64-bit word.
// The sponge (rate, padding, absorbing) belongs to the caller: the rate is a
// constant owned by Go and passed as a define.
#pragma once

#include "warpkv/types.cuh"

#define KECCAK_LANES 25
#define KECCAK_ROUNDS 24

// Round constants of iota.
__constant__ u64 keccak_rc[KECCAK_ROUNDS] = {
    0x0000000000000001ull, 0x0000000000008082ull, 0x800000000000808aull, 0x8000000080008000ull,
    0x000000000000808bull, 0x0000000080000001ull, 0x8000000080008081ull, 0x8000000000008009ull,
    0x000000000000008aull, 0x0000000000000088ull, 0x0000000080008009ull, 0x000000008000000aull,
    0x000000008000808bull, 0x800000000000008bull, 0x8000000000008089ull, 0x8000000000008003ull,
    0x8000000000008002ull, 0x8000000000000080ull, 0x000000000000800aull, 0x800000008000000aull,
    0x8000000080008081ull, 0x8000000000008080ull, 0x0000000080000001ull, 0x8000000080008008ull,
};

// Rotation offsets of rho, by state lane x + 5y (for permutations that
// rotate each lane on its own thread; keccak_f1600 has them as template
// arguments).
__constant__ u32 keccak_rho[KECCAK_LANES] = {
    0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14,
};

__device__ __forceinline__ u32 lo32(u64 v) { return (u32)v; }
__device__ __forceinline__ u32 hi32(u64 v) { return (u32)(v >> 32); }
__device__ __forceinline__ u64 join64(u32 lo, u32 hi) { return ((u64)hi << 32) | lo; }

// rotl64<N> rotates left by the compile-time amount N (0 < N < 64) with
// two funnel shifts on the 32-bit halves (two SHF instructions).
template <int N>
__device__ __forceinline__ u64 rotl64(u64 v) {
    const u32 lo = lo32(v), hi = hi32(v);
    if constexpr (N < 32)
        return join64(__funnelshift_l(hi, lo, N), __funnelshift_l(lo, hi, N));
    else
        return join64(__funnelshift_l(lo, hi, N - 32), __funnelshift_l(hi, lo, N - 32));
}

// rotl64_var rotates left by a run-time amount n in [0, 64).
__device__ __forceinline__ u64 rotl64_var(u64 v, u32 n) {
    u32 lo = lo32(v), hi = hi32(v);
    if (n & 32) {
        const u32 t = lo;
        lo = hi;
        hi = t;
    }
    return join64(__funnelshift_l(hi, lo, n), __funnelshift_l(lo, hi, n));
}

// keccak_f1600 is the Keccak-f[1600] permutation on a state held in
// registers (every lane index is a compile-time constant), with its rounds
// unrolled UNROLL at a time: fully by default; UNROLL 1 keeps one round's
// code and reads the round constant from constant memory each round.
template <int UNROLL = KECCAK_ROUNDS>
__device__ __forceinline__ void keccak_f1600(u64 (&a)[KECCAK_LANES]) {
    static_assert(UNROLL >= 1 && KECCAK_ROUNDS % UNROLL == 0, "UNROLL must divide KECCAK_ROUNDS");
#pragma unroll UNROLL
    for (int r = 0; r < KECCAK_ROUNDS; ++r) {
        // theta
        const u64 c0 = a[0] ^ a[5] ^ a[10] ^ a[15] ^ a[20];
        const u64 c1 = a[1] ^ a[6] ^ a[11] ^ a[16] ^ a[21];
        const u64 c2 = a[2] ^ a[7] ^ a[12] ^ a[17] ^ a[22];
        const u64 c3 = a[3] ^ a[8] ^ a[13] ^ a[18] ^ a[23];
        const u64 c4 = a[4] ^ a[9] ^ a[14] ^ a[19] ^ a[24];
        const u64 d0 = c4 ^ rotl64<1>(c1);
        const u64 d1 = c0 ^ rotl64<1>(c2);
        const u64 d2 = c1 ^ rotl64<1>(c3);
        const u64 d3 = c2 ^ rotl64<1>(c4);
        const u64 d4 = c3 ^ rotl64<1>(c0);
        // rho and pi: b[y + 5(2x+3y)] = rotl(a[x + 5y], rho[x + 5y])
        const u64 b0 = a[0] ^ d0;
        const u64 b1 = rotl64<44>(a[6] ^ d1);
        const u64 b2 = rotl64<43>(a[12] ^ d2);
        const u64 b3 = rotl64<21>(a[18] ^ d3);
        const u64 b4 = rotl64<14>(a[24] ^ d4);
        const u64 b5 = rotl64<28>(a[3] ^ d3);
        const u64 b6 = rotl64<20>(a[9] ^ d4);
        const u64 b7 = rotl64<3>(a[10] ^ d0);
        const u64 b8 = rotl64<45>(a[16] ^ d1);
        const u64 b9 = rotl64<61>(a[22] ^ d2);
        const u64 b10 = rotl64<1>(a[1] ^ d1);
        const u64 b11 = rotl64<6>(a[7] ^ d2);
        const u64 b12 = rotl64<25>(a[13] ^ d3);
        const u64 b13 = rotl64<8>(a[19] ^ d4);
        const u64 b14 = rotl64<18>(a[20] ^ d0);
        const u64 b15 = rotl64<27>(a[4] ^ d4);
        const u64 b16 = rotl64<36>(a[5] ^ d0);
        const u64 b17 = rotl64<10>(a[11] ^ d1);
        const u64 b18 = rotl64<15>(a[17] ^ d2);
        const u64 b19 = rotl64<56>(a[23] ^ d3);
        const u64 b20 = rotl64<62>(a[2] ^ d2);
        const u64 b21 = rotl64<55>(a[8] ^ d3);
        const u64 b22 = rotl64<39>(a[14] ^ d4);
        const u64 b23 = rotl64<41>(a[15] ^ d0);
        const u64 b24 = rotl64<2>(a[21] ^ d1);
        // chi (one LOP3 per 32-bit half), iota
        a[0] = b0 ^ (~b1 & b2) ^ keccak_rc[r];
        a[1] = b1 ^ (~b2 & b3);
        a[2] = b2 ^ (~b3 & b4);
        a[3] = b3 ^ (~b4 & b0);
        a[4] = b4 ^ (~b0 & b1);
        a[5] = b5 ^ (~b6 & b7);
        a[6] = b6 ^ (~b7 & b8);
        a[7] = b7 ^ (~b8 & b9);
        a[8] = b8 ^ (~b9 & b5);
        a[9] = b9 ^ (~b5 & b6);
        a[10] = b10 ^ (~b11 & b12);
        a[11] = b11 ^ (~b12 & b13);
        a[12] = b12 ^ (~b13 & b14);
        a[13] = b13 ^ (~b14 & b10);
        a[14] = b14 ^ (~b10 & b11);
        a[15] = b15 ^ (~b16 & b17);
        a[16] = b16 ^ (~b17 & b18);
        a[17] = b17 ^ (~b18 & b19);
        a[18] = b18 ^ (~b19 & b15);
        a[19] = b19 ^ (~b15 & b16);
        a[20] = b20 ^ (~b21 & b22);
        a[21] = b21 ^ (~b22 & b23);
        a[22] = b22 ^ (~b23 & b24);
        a[23] = b23 ^ (~b24 & b20);
        a[24] = b24 ^ (~b20 & b21);
    }
}

// shfl64 reads v from lane src of the warp.
__device__ __forceinline__ u64 shfl64(u64 v, int src) {
    return join64(__shfl_sync(FULL_MASK, lo32(v), src), __shfl_sync(FULL_MASK, hi32(v), src));
}

// KeccakWarpLane is one lane's part of the warp-cooperative permutation
// (keccak_f1600_warp): lane t < 25 holds state lane t = x + 5y, and these
// are the lanes it reads through shuffles in each round, computed once.
// Lanes 25..31 only take part in the shuffles: they read themselves and
// rotate by 0, so their values never reach a live lane.
struct KeccakWarpLane {
    int t;                      // the lane
    int col1, col2, col3, col4; // theta: the rest of the lane's column
    int west, east;             // theta: columns x-1 and x+1 (east: chi too)
    int east2;                  // chi: column x+2
    int pi_src;                 // pi: b[x + 5y] = a[(x+3y)%5 + 5x]
    u32 rho;                    // rho's rotation of state lane t
};

// keccak_warp_lane returns lane t's shuffle sources.
__device__ __forceinline__ KeccakWarpLane keccak_warp_lane(int t) {
    const bool live = t < KECCAK_LANES;
    const int x = t % 5, y = t / 5;
    KeccakWarpLane s;
    s.t = t;
    s.col1 = live ? (t + 5) % KECCAK_LANES : t;
    s.col2 = live ? (t + 10) % KECCAK_LANES : t;
    s.col3 = live ? (t + 15) % KECCAK_LANES : t;
    s.col4 = live ? (t + 20) % KECCAK_LANES : t;
    s.west = live ? 5 * y + (x + 4) % 5 : t;
    s.east = live ? 5 * y + (x + 1) % 5 : t;
    s.east2 = live ? 5 * y + (x + 2) % 5 : t;
    s.pi_src = live ? (3 * y + x) % 5 + 5 * x : t;
    s.rho = live ? keccak_rho[t] : 0;
    return s;
}

// keccak_warp_round is round r of the warp-cooperative permutation on this
// lane's state lane a.
__device__ __forceinline__ void keccak_warp_round(u64& a, const KeccakWarpLane& s, int r) {
    // theta: c = parity of this lane's column, d from columns x-1 and x+1
    const u64 c = a ^ shfl64(a, s.col1) ^ shfl64(a, s.col2) ^ shfl64(a, s.col3) ^ shfl64(a, s.col4);
    a ^= shfl64(c, s.west) ^ rotl64<1>(shfl64(c, s.east));
    // rho at the source lane, then pi
    const u64 b = shfl64(rotl64_var(a, s.rho), s.pi_src);
    // chi, iota
    a = b ^ (~shfl64(b, s.east) & shfl64(b, s.east2));
    if (s.t == 0)
        a ^= keccak_rc[r];
}

// keccak_f1600_warp is the Keccak-f[1600] permutation with one state lane
// per thread (every lane of the warp calls it together, converged): lane
// t < 25 holds state lane t in a before and after. Its rounds are unrolled
// UNROLL at a time (UNROLL divides 24), or as the compiler chooses with
// UNROLL 0 (no pragma). Each kernel keeps the unroll that measured fastest
// for it: prim's keccak256_warp 4 (24 hoists the round constants into
// registers and spills), mpt's PhaseHC 0.
template <int UNROLL>
__device__ __forceinline__ void keccak_f1600_warp(u64& a, const KeccakWarpLane& s) {
    static_assert(UNROLL >= 0 && (UNROLL == 0 || KECCAK_ROUNDS % UNROLL == 0),
                  "UNROLL must be 0 or divide KECCAK_ROUNDS");
    if constexpr (UNROLL == 0) {
        for (int r = 0; r < KECCAK_ROUNDS; ++r)
            keccak_warp_round(a, s, r);
    } else {
#pragma unroll UNROLL
        for (int r = 0; r < KECCAK_ROUNDS; ++r)
            keccak_warp_round(a, s, r);
    }
}
