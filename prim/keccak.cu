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
typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

// Launch constants; each equals the Go constant named beside it in
// keccak_gpu.go.
#define KECCAK_RATE 136         // keccakRate: bytes absorbed per permutation
#define KECCAK_THREAD_BLOCK 128 // keccakThreadBlock: threads per block of keccak256_thread
#define KECCAK_WARP_BLOCK 256   // keccakWarpBlock: threads per block of keccak256_warp

// Rounds per trip of keccak256_warp's round loop: unrolling all 24 makes the
// compiler hoist the 24 round constants into registers, and spill.
#define KECCAK_WARP_ROUND_UNROLL 4

#define KECCAK_RATE_LANES (KECCAK_RATE / 8) // 17 state lanes absorb data
#define KECCAK_RATE_WORDS (KECCAK_RATE / 4) // 34 aligned words per block
#define KECCAK_LANES 25
#define KECCAK_ROUNDS 24
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu

// Round constants of iota.
__constant__ u64 keccak_rc[KECCAK_ROUNDS] = {
    0x0000000000000001ull, 0x0000000000008082ull, 0x800000000000808aull, 0x8000000080008000ull,
    0x000000000000808bull, 0x0000000080000001ull, 0x8000000080008081ull, 0x8000000000008009ull,
    0x000000000000008aull, 0x0000000000000088ull, 0x0000000080008009ull, 0x000000008000000aull,
    0x000000008000808bull, 0x800000000000008bull, 0x8000000000008089ull, 0x8000000000008003ull,
    0x8000000000008002ull, 0x8000000000000080ull, 0x000000000000800aull, 0x800000008000000aull,
    0x8000000080008081ull, 0x8000000000008080ull, 0x0000000080000001ull, 0x8000000080008008ull,
};

// Rotation offsets of rho, by state lane x + 5y (used by the warp kernel;
// the thread kernel has them as template arguments).
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

// keccak_f1600 is the Keccak-f[1600] permutation on a state held in
// registers: every index is a compile-time constant after unrolling.
__device__ __forceinline__ void keccak_f1600(u64 (&a)[KECCAK_LANES]) {
#pragma unroll
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

// shfl64 reads v from lane src of the warp.
__device__ __forceinline__ u64 shfl64(u64 v, int src) {
    return join64(__shfl_sync(FULL_MASK, lo32(v), src), __shfl_sync(FULL_MASK, hi32(v), src));
}

// keccak256_warp: out[i] = Keccak-256(data[offsets[i] .. offsets[i+1]))
// for i < n, like keccak256_thread.
// Thread mapping: one warp per message (warp i of the grid hashes message
// i). Lane t < 25 holds state lane t = x + 5y; lanes 25..31 only take part
// in the shuffles. Each loop iteration loads one 136-byte block (lane t < 17
// reads the three aligned words under its 8 bytes, coalesced), absorbs it
// and permutes: theta, pi and chi read other lanes through __shfl_sync with
// per-lane source lanes computed once into registers.
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
    const bool live = t < KECCAK_LANES;
    const int x = t % 5, y = t / 5;
    // Per-lane shuffle sources; lanes past the state read themselves.
    const int col1 = live ? (t + 5) % KECCAK_LANES : t;  // theta: rest of the column
    const int col2 = live ? (t + 10) % KECCAK_LANES : t;
    const int col3 = live ? (t + 15) % KECCAK_LANES : t;
    const int col4 = live ? (t + 20) % KECCAK_LANES : t;
    const int west = live ? 5 * y + (x + 4) % 5 : t;     // theta: column x-1
    const int east = live ? 5 * y + (x + 1) % 5 : t;     // theta and chi: column x+1
    const int east2 = live ? 5 * y + (x + 2) % 5 : t;    // chi: column x+2
    const int pi_src = live ? (3 * y + x) % 5 + 5 * x : t; // pi: b[x + 5y] = a[(x+3y)%5 + 5x]
    const u32 rho = live ? keccak_rho[t] : 0;

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
#pragma unroll KECCAK_WARP_ROUND_UNROLL
        for (int r = 0; r < KECCAK_ROUNDS; ++r) {
            // theta: c = parity of this lane's column, d from columns x-1, x+1
            const u64 c = a ^ shfl64(a, col1) ^ shfl64(a, col2) ^ shfl64(a, col3) ^ shfl64(a, col4);
            a ^= shfl64(c, west) ^ rotl64<1>(shfl64(c, east));
            // rho at the source lane, then pi
            const u64 b = shfl64(rotl64_var(a, rho), pi_src);
            // chi, iota
            a = b ^ (~shfl64(b, east) & shfl64(b, east2));
            if (t == 0)
                a ^= keccak_rc[r];
        }
        if (final)
            break;
        rem -= KECCAK_RATE;
        w += KECCAK_RATE_WORDS;
    }
    if (valid && t < 4)
        out[4 * i + t] = a;
}
