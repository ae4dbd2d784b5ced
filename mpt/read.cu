// read.cu: batch lookups, value gathering and proofs (read_gpu.go launches
// them).

#include "mpt/mpt.cuh"
#include "mpt/encode.cuh"

// ---------------------------------------------------------------- lookups and proofs

// lookup returns the value id stored under key k (len nibbles) below root.
__device__ u32 lookup(const Node* nodes, u32 root, const u8* k, u32 len) {
    u32 n = root, d = 0;
    while (n != 0) {
        const Node* nd = &nodes[n];
        if (nd->kind == KIND_BRANCH) {
            if (d == len)
                return nd->val;
            n = nd->child[key_nib(k, d)];
            ++d;
            continue;
        }
        const u32 L = nd->plen;
        if (len - d < L)
            return 0;
        for (u32 q = 0; q < L; ++q)
            if (path_nib(nd, q) != key_nib(k, d + q))
                return 0;
        d += L;
        if (nd->kind == KIND_LEAF)
            return d == len ? nd->val : 0;
        n = nd->child[0];
    }
    return 0;
}

// mpt_lookup: vid[i] and vlen[i] of key i (0 and 0 when absent). Thread
// mapping: one thread per key.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_lookup(const Node* __restrict__ nodes, const Val* __restrict__ vals, u32 root, const u8* __restrict__ keys,
           u32 stride, const u32* __restrict__ lens, u64 n, u32* __restrict__ vid, u64* __restrict__ vlen) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK) {
        const u32 v = root ? lookup(nodes, root, keys + i * stride, 2 * lens[i]) : 0;
        vid[i] = v;
        vlen[i] = v ? vals[v].len : 0;
    }
}

// mpt_gather: copies the value of result i to out[offs[i] ...]. Thread
// mapping: one warp per result, lanes copying consecutive bytes.
extern "C" __global__ void __launch_bounds__(MPT_WARP_BLOCK)
mpt_gather(const Val* __restrict__ vals, const u8* __restrict__ arena, const u32* __restrict__ vid, u64 n,
           const u64* __restrict__ offs, u8* __restrict__ out) {
    const u64 warps = (u64)gridDim.x * WARPS_PER_BLOCK;
    const int t = threadIdx.x % WARP;
    for (u64 i = ((u64)blockIdx.x * MPT_WARP_BLOCK + threadIdx.x) / WARP; i < n; i += warps) {
        const u32 v = vid[i];
        if (v == 0)
            continue;
        const u8* src = arena + vals[v].off;
        u8* dst = out + offs[i];
        for (u32 b = t; b < vals[v].len; b += WARP)
            dst[b] = src[b];
    }
}

// proof_step advances a proof walk past node n for key k at nibble depth
// d; returns the next node (0: the walk ends).
__device__ u32 proof_step(const Node* nodes, u32 n, const u8* k, u32 len, u32* d) {
    const Node* nd = &nodes[n];
    if (nd->kind == KIND_BRANCH) {
        if (*d == len)
            return 0;
        const u32 c = nd->child[key_nib(k, *d)];
        ++*d;
        return c;
    }
    if (nd->kind == KIND_LEAF)
        return 0;
    const u32 L = nd->plen;
    if (len - *d < L)
        return 0;
    for (u32 q = 0; q < L; ++q)
        if (path_nib(nd, q) != key_nib(k, *d + q))
            return 0;
    *d += L;
    return nd->child[0];
}

// proof_walk walks key k (len nibbles) from root and calls visit(e) with
// the encoding (prefix in scratch, tail in the arena) of every node its
// proof lists: those hashed in their parent (reflen 32; the root always),
// as go-ethereum's Prove lists them, root first.
template <typename Visit>
__device__ __forceinline__ void proof_walk(const Node* nodes, const Val* vals, const u8* arena, u32 root, const u8* k,
                                           u32 len, u8* scratch, Visit visit) {
    u32 d = 0;
    for (u32 nd = root; nd != 0; nd = proof_step(nodes, nd, k, len, &d)) {
        if (nd != root && nodes[nd].reflen != 32)
            continue;
        visit(encode_prefix(nodes, vals, arena, nd, scratch));
    }
}

// mpt_proof_size: count[i] and bytes[i] of key i's proof (the nodes
// proof_walk visits). Thread mapping: one thread per key.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_proof_size(const Node* __restrict__ nodes, const Val* __restrict__ vals, const u8* __restrict__ arena,
               u32 root, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ lens, u64 n,
               u32* __restrict__ count, u64* __restrict__ bytes) {
    u8 scratch[MPT_PREFIX_MAX];
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK) {
        u32 c = 0;
        u64 b = 0;
        proof_walk(nodes, vals, arena, root, keys + i * stride, 2 * lens[i], scratch, [&](const Encoding& e) {
            ++c;
            b += e.prefix_len + e.tail_len;
        });
        count[i] = c;
        bytes[i] = b;
    }
}

// mpt_proof_write: writes key i's proof nodes at out[boffs[i] ...] and the
// end offset of each at ends[noffs[i] ...] (relative to boffs[i]). Thread
// mapping: one thread per key.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_proof_write(const Node* __restrict__ nodes, const Val* __restrict__ vals, const u8* __restrict__ arena,
                u32 root, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ lens, u64 n,
                const u64* __restrict__ boffs, const u32* __restrict__ noffs, u8* __restrict__ out,
                u32* __restrict__ ends) {
    u8 scratch[MPT_PREFIX_MAX];
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK) {
        u8* o = out + boffs[i];
        u32* en = ends + noffs[i];
        u32 c = 0;
        u64 b = 0;
        proof_walk(nodes, vals, arena, root, keys + i * stride, 2 * lens[i], scratch, [&](const Encoding& e) {
            for (u32 q = 0; q < e.prefix_len; ++q)
                o[b++] = scratch[q];
            for (u32 q = 0; q < e.tail_len; ++q)
                o[b++] = arena[e.tail_off + q];
            en[c++] = (u32)b;
        });
    }
}
