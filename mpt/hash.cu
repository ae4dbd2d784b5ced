// hash.cu: PhaseHC (hash_gpu.go launches it): Keccak-256 of every dirty
// node bottom-up, leaves one thread each, inner nodes one warp each.

#include "mpt/mpt.cuh"
#include "mpt/encode.cuh"
#include "warpkv/keccak.cuh"

// ---------------------------------------------------------------- PhaseHC: warp Keccak

// KECCAK_RATE (keccakRate: bytes absorbed per permutation) is passed from
// kernels_gpu.go; the permutation and its pieces are warpkv/keccak.cuh's.
#if !defined(KECCAK_RATE)
#error "KECCAK_RATE is passed from kernels_gpu.go"
#endif
// MPT_KECCAK_UNROLL (keccakUnroll): rounds of mpt_hash_leaves' permutation
// unrolled at a time, passed from kernels_gpu.go.
#if !defined(MPT_KECCAK_UNROLL)
#error "MPT_KECCAK_UNROLL is passed from kernels_gpu.go"
#endif
#define KECCAK_RATE_LANES (KECCAK_RATE / 8) // state lanes that absorb data

// warp_keccak returns, in every lane t < 4, word t of the Keccak-256 of the
// message prefix || tail (all lanes of the warp call it together), with
// keccak.cuh's warp-cooperative permutation (keccak_f1600_warp, its rounds
// unrolled as the compiler chooses, as measured). Lane t < 25 holds state
// lane t = x + 5y; lanes 25..31 only take part in the shuffles. Lane t < 17
// gathers its 8 bytes of each block.
__device__ u64 warp_keccak(const u8* prefix, const Encoding& e, const u8* arena) {
    const int t = threadIdx.x % WARP;
    const KeccakWarpLane lane = keccak_warp_lane(t);
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
        keccak_f1600_warp<0>(a, lane); // rounds unrolled as the compiler chooses
    }
    return a;
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
                keccak_f1600<MPT_KECCAK_UNROLL>(a);
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
