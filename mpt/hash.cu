// hash.cu: PhaseHC (hash_gpu.go launches it): Keccak-256 of every dirty
// node bottom-up, leaves one thread each, inner nodes one warp each.

#include "mpt/mpt.cuh"
#include "mpt/encode.cuh"

// ---------------------------------------------------------------- PhaseHC: warp Keccak

#define KECCAK_RATE 136
#define KECCAK_RATE_LANES 17
#define KECCAK_LANES 25
#define KECCAK_ROUNDS 24

__constant__ u64 keccak_rc[KECCAK_ROUNDS] = {
    0x0000000000000001ull, 0x0000000000008082ull, 0x800000000000808aull, 0x8000000080008000ull,
    0x000000000000808bull, 0x0000000080000001ull, 0x8000000080008081ull, 0x8000000000008009ull,
    0x000000000000008aull, 0x0000000000000088ull, 0x0000000080008009ull, 0x000000008000000aull,
    0x000000008000808bull, 0x800000000000008bull, 0x8000000000008089ull, 0x8000000000008003ull,
    0x8000000000008002ull, 0x8000000000000080ull, 0x000000000000800aull, 0x800000008000000aull,
    0x8000000080008081ull, 0x8000000000008080ull, 0x0000000080000001ull, 0x8000000080008008ull,
};

__constant__ u32 keccak_rho[KECCAK_LANES] = {
    0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14,
};

__device__ __forceinline__ u64 rotl64_var(u64 v, u32 n) {
    return n == 0 ? v : (v << n) | (v >> (64 - n));
}

__device__ __forceinline__ u64 shfl64(u64 v, int src) {
    return ((u64)__shfl_sync(FULL_MASK, (u32)(v >> 32), src) << 32) | __shfl_sync(FULL_MASK, (u32)v, src);
}

// warp_keccak returns, in every lane t < 4, word t of the Keccak-256 of the
// message prefix || tail (all lanes of the warp call it together). Lane
// t < 25 holds state lane t; lane t < 17 gathers its 8 bytes of each block.
__device__ u64 warp_keccak(const u8* prefix, const Encoding& e, const u8* arena) {
    const int t = threadIdx.x % WARP;
    const bool live = t < KECCAK_LANES;
    const int x = t % 5, y = t / 5;
    const int col1 = live ? (t + 5) % KECCAK_LANES : t;
    const int col2 = live ? (t + 10) % KECCAK_LANES : t;
    const int col3 = live ? (t + 15) % KECCAK_LANES : t;
    const int col4 = live ? (t + 20) % KECCAK_LANES : t;
    const int west = live ? 5 * y + (x + 4) % 5 : t;
    const int east = live ? 5 * y + (x + 1) % 5 : t;
    const int east2 = live ? 5 * y + (x + 2) % 5 : t;
    const int pi_src = live ? (3 * y + x) % 5 + 5 * x : t;
    const u32 rho = live ? keccak_rho[t] : 0;
    const u32 total = e.prefix_len + e.tail_len;
    const u32 blocks = total / KECCAK_RATE + 1;
    u64 a = 0;
    for (u32 blk = 0; blk < blocks; ++blk) {
        if (t < KECCAK_RATE_LANES) {
            u64 v = 0;
            const u32 base = blk * KECCAK_RATE + 8 * t;
            for (int b = 0; b < 8; ++b) {
                const u32 q = base + b;
                u32 byte = q < total ? msg_byte(prefix, e, arena, q) : 0;
                if (q == total)
                    byte ^= 0x01;
                if (blk + 1 == blocks && q == blk * KECCAK_RATE + KECCAK_RATE - 1)
                    byte ^= 0x80;
                v |= (u64)byte << (8 * b);
            }
            a ^= v;
        }
        for (int r = 0; r < KECCAK_ROUNDS; ++r) {
            const u64 c = a ^ shfl64(a, col1) ^ shfl64(a, col2) ^ shfl64(a, col3) ^ shfl64(a, col4);
            const u64 cw = shfl64(c, west), ce = shfl64(c, east);
            a ^= cw ^ ((ce << 1) | (ce >> 63));
            const u64 b = shfl64(rotl64_var(a, rho), pi_src);
            const u64 b1 = shfl64(b, east), b2 = shfl64(b, east2);
            a = b ^ (~b1 & b2);
            if (t == 0)
                a ^= keccak_rc[r];
        }
    }
    return a;
}

// rotl64c rotates left by the compile-time amount N (0 < N < 64).
template <int N>
__device__ __forceinline__ u64 rotl64c(u64 v) {
    return (v << N) | (v >> (64 - N));
}

// keccak_f1600 is the Keccak-f[1600] permutation on a state held in one
// thread's registers.
__device__ __forceinline__ void keccak_f1600(u64 (&a)[KECCAK_LANES]) {
#pragma unroll 1
    for (int r = 0; r < KECCAK_ROUNDS; ++r) {
        const u64 c0 = a[0] ^ a[5] ^ a[10] ^ a[15] ^ a[20];
        const u64 c1 = a[1] ^ a[6] ^ a[11] ^ a[16] ^ a[21];
        const u64 c2 = a[2] ^ a[7] ^ a[12] ^ a[17] ^ a[22];
        const u64 c3 = a[3] ^ a[8] ^ a[13] ^ a[18] ^ a[23];
        const u64 c4 = a[4] ^ a[9] ^ a[14] ^ a[19] ^ a[24];
        const u64 d0 = c4 ^ rotl64c<1>(c1);
        const u64 d1 = c0 ^ rotl64c<1>(c2);
        const u64 d2 = c1 ^ rotl64c<1>(c3);
        const u64 d3 = c2 ^ rotl64c<1>(c4);
        const u64 d4 = c3 ^ rotl64c<1>(c0);
        const u64 b0 = a[0] ^ d0;
        const u64 b1 = rotl64c<44>(a[6] ^ d1);
        const u64 b2 = rotl64c<43>(a[12] ^ d2);
        const u64 b3 = rotl64c<21>(a[18] ^ d3);
        const u64 b4 = rotl64c<14>(a[24] ^ d4);
        const u64 b5 = rotl64c<28>(a[3] ^ d3);
        const u64 b6 = rotl64c<20>(a[9] ^ d4);
        const u64 b7 = rotl64c<3>(a[10] ^ d0);
        const u64 b8 = rotl64c<45>(a[16] ^ d1);
        const u64 b9 = rotl64c<61>(a[22] ^ d2);
        const u64 b10 = rotl64c<1>(a[1] ^ d1);
        const u64 b11 = rotl64c<6>(a[7] ^ d2);
        const u64 b12 = rotl64c<25>(a[13] ^ d3);
        const u64 b13 = rotl64c<8>(a[19] ^ d4);
        const u64 b14 = rotl64c<18>(a[20] ^ d0);
        const u64 b15 = rotl64c<27>(a[4] ^ d4);
        const u64 b16 = rotl64c<36>(a[5] ^ d0);
        const u64 b17 = rotl64c<10>(a[11] ^ d1);
        const u64 b18 = rotl64c<15>(a[17] ^ d2);
        const u64 b19 = rotl64c<56>(a[23] ^ d3);
        const u64 b20 = rotl64c<62>(a[2] ^ d2);
        const u64 b21 = rotl64c<55>(a[8] ^ d3);
        const u64 b22 = rotl64c<39>(a[14] ^ d4);
        const u64 b23 = rotl64c<41>(a[15] ^ d0);
        const u64 b24 = rotl64c<2>(a[21] ^ d1);
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

// MPT_LEAF_PREFIX_MAX bounds a leaf's encoding prefix: list header (5),
// compact path string (2 + 1 + 128/2), value string header (5).
#define MPT_LEAF_PREFIX_MAX 80

// mpt_hash_leaves: PhaseHC's computing phase for the leaf starts. Thread
// mapping: one thread per start; a leaf (not the root) is encoded into
// thread-local memory and hashed by the thread alone (state in registers,
// one 136-byte block per permutation), which beats a warp per node when
// there are many leaves; then its parent's counter is decremented and a
// parent brought to zero is appended to next. Any other start (a branch
// or extension without dirty children, or the root) is appended to next
// untouched. mpt_hash then runs over next with one warp per walk.
// Invariant: as mpt_hash's.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_hash_leaves(Node* nodes_, const Val* __restrict__ vals, const u8* __restrict__ arena,
                const u32* __restrict__ starts, u64 ns, u32 root, u32* __restrict__ next, u32* __restrict__ ctl) {
    volatile Node* nodes = nodes_;
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < ns; i += (u64)gridDim.x * MPT_BLOCK) {
        const u32 n = starts[i];
        if (n == root || nodes[n].kind != KIND_LEAF) {
            next[atomicAdd(&ctl[CTL_NEXT], 1u)] = n;
            continue;
        }
        u8 prefix[MPT_LEAF_PREFIX_MAX];
        const Encoding e = encode_prefix(nodes, vals, arena, n, prefix);
        const u32 total = e.prefix_len + e.tail_len;
        if (total < 32) {
            for (u32 q = 0; q < total; ++q)
                nodes[n].ref[q] = (u8)msg_byte(prefix, e, arena, q);
            nodes[n].reflen = total;
        } else {
            u64 a[KECCAK_LANES];
#pragma unroll
            for (int k = 0; k < KECCAK_LANES; ++k)
                a[k] = 0;
            const u32 blocks = total / KECCAK_RATE + 1;
            for (u32 blk = 0; blk < blocks; ++blk) {
                const u32 base = blk * KECCAK_RATE;
#pragma unroll
                for (int k = 0; k < KECCAK_RATE_LANES; ++k) {
                    u64 v = 0;
                    const u32 b0 = base + 8 * k;
                    if (b0 >= e.prefix_len && b0 + 8 <= total) {
                        const u8* src = arena + e.tail_off + (b0 - e.prefix_len);
#pragma unroll
                        for (int b = 0; b < 8; ++b)
                            v |= (u64)src[b] << (8 * b);
                    } else {
                        for (int b = 0; b < 8; ++b) {
                            const u32 q = b0 + b;
                            u32 byte = q < total ? msg_byte(prefix, e, arena, q) : 0;
                            if (q == total)
                                byte ^= 0x01;
                            v |= (u64)byte << (8 * b);
                        }
                    }
                    if (blk + 1 == blocks && k == KECCAK_RATE_LANES - 1)
                        v ^= 0x80ull << 56;
                    a[k] ^= v;
                }
                keccak_f1600(a);
            }
            for (int w = 0; w < 4; ++w)
                for (int b = 0; b < 8; ++b)
                    nodes[n].ref[8 * w + b] = (u8)(a[w] >> (8 * b));
            nodes[n].reflen = 32;
        }
        nodes[n].flags = 0;
        __threadfence();
        const u32 p = nodes[n].parent;
        if (p != 0 && atomicSub((u32*)&nodes_[p].pending, 1u) == 1u)
            next[atomicAdd(&ctl[CTL_NEXT], 1u)] = p;
    }
}

// mpt_hash: PhaseHC's computing phase. Thread mapping: one warp per start
// (a dirty node without dirty children). The warp's lane 0 builds the
// node's encoding prefix in shared memory; if the encoding is under 32
// bytes and the node is not the root, the encoding itself is the node's
// reference; otherwise all lanes hash it (warp_keccak) and lanes 0..3 store
// the digest. Then lane 0 clears the node's dirty flag, fences, and
// decrements the parent's counter; the warp goes on with the parent only
// when it brought the counter to zero. Invariant: a node is encoded only
// after all its dirty children stored their references; every dirty node
// is hashed exactly once.
extern "C" __global__ void __launch_bounds__(MPT_WARP_BLOCK)
mpt_hash(Node* nodes_, const Val* __restrict__ vals, const u8* __restrict__ arena, const u32* __restrict__ starts,
         u64 ns, u32 root) {
    volatile Node* nodes = nodes_;
    __shared__ u8 prefix_buf[WARPS_PER_BLOCK][MPT_PREFIX_MAX];
    __shared__ Encoding enc_buf[WARPS_PER_BLOCK];
    const int w = threadIdx.x / WARP, t = threadIdx.x % WARP;
    u8* prefix = prefix_buf[w];
    const u64 warps = (u64)gridDim.x * WARPS_PER_BLOCK;
    for (u64 i = (u64)blockIdx.x * WARPS_PER_BLOCK + w; i < ns; i += warps) {
        u32 n = starts[i];
        for (;;) {
            if (t == 0)
                enc_buf[w] = encode_prefix(nodes, vals, arena, n, prefix);
            __syncwarp();
            const Encoding e = enc_buf[w];
            const u32 total = e.prefix_len + e.tail_len;
            if (total < 32 && n != root) {
                if (t < (int)total)
                    nodes[n].ref[t] = (u8)msg_byte(prefix, e, arena, t);
                if (t == 0)
                    nodes[n].reflen = total;
            } else {
                const u64 a = warp_keccak(prefix, e, arena);
                if (t < 4)
                    for (int b = 0; b < 8; ++b)
                        nodes[n].ref[8 * t + b] = (u8)(a >> (8 * b));
                if (t == 0)
                    nodes[n].reflen = 32;
            }
            u32 go = 0;
            const u32 p = nodes[n].parent;
            __threadfence(); // this lane's reference bytes before the hand-off
            __syncwarp();
            if (t == 0) {
                nodes[n].flags = 0;
                __threadfence();
                go = p != 0 && atomicSub((u32*)&nodes_[p].pending, 1u) == 1u;
                if (go)
                    __threadfence();
            }
            go = __shfl_sync(FULL_MASK, go, 0);
            __syncwarp();
            if (!go)
                break;
            n = p;
        }
    }
}
