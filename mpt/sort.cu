// sort.cu: the batch's device sort helpers and last-wins dedupe (sort_gpu.go
// launches them), and the per-operation state PhaseNU and LockNU start
// from (mpt_op_init).

#include "mpt/mpt.cuh"

// ---------------------------------------------------------------- sort and dedupe

// mpt_iota: perm[i] = i. Thread mapping: one thread per element.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK) mpt_iota(u32* perm, u64 n) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK)
        perm[i] = (u32)i;
}

// mpt_key_len: out[j] = len[perm[j]] (the sort's last, least significant
// criterion first). Thread mapping: one thread per element.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_key_len(const u32* __restrict__ lens, const u32* __restrict__ perm, u64 n, u32* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK)
        out[i] = lens[perm[i]];
}

// mpt_key_word: out[j] = big-endian 64-bit word w of key perm[j] (keys are
// zero-padded to stride bytes, so the order of the words is the byte order).
// Thread mapping: one thread per element.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_key_word(const u8* __restrict__ keys, u32 stride, const u32* __restrict__ perm, u64 n, u32 w,
             u64* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK) {
        const u8* k = keys + (u64)perm[i] * stride + 8 * w;
        u64 v = 0;
#pragma unroll
        for (int b = 0; b < 8; ++b)
            v = (v << 8) | k[b];
        out[i] = v;
    }
}

__device__ __forceinline__ bool same_key(const u8* a, const u8* b, u32 la, u32 lb) {
    if (la != lb)
        return false;
    for (u32 i = 0; i < la; ++i)
        if (a[i] != b[i])
            return false;
    return true;
}

// mpt_last_flags: flags[j] = 1 when sorted operation j is the last of its
// key (the sort is stable, so it is the last in batch order: it wins).
// Thread mapping: one thread per sorted operation.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_last_flags(const u8* __restrict__ keys, u32 stride, const u32* __restrict__ lens,
               const u32* __restrict__ perm, u64 n, u8* __restrict__ flags) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < n; j += (u64)gridDim.x * MPT_BLOCK) {
        bool last = j + 1 == n;
        if (!last) {
            const u32 a = perm[j], b = perm[j + 1];
            last = !same_key(keys + (u64)a * stride, keys + (u64)b * stride, lens[a], lens[b]);
        }
        flags[j] = last;
    }
}

// mpt_op_init: for kept operation j (ops[j] = its batch index), its path
// length in nibbles, its value id (0 for a delete), its need (the longest
// common prefix, in nibbles, with either sorted neighbour: the depth down to
// which it shares branches with other keys of the batch), its prefix shared
// with the previous operation (prev), and a walk from the root. Thread
// mapping: one thread per kept operation.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_op_init(const u8* __restrict__ keys, u32 stride, const u32* __restrict__ lens,
            const u32* __restrict__ vlens, u32 vbase, const u32* __restrict__ ops, u64 m, u32 root,
            u32* __restrict__ klen, u32* __restrict__ vid, u32* __restrict__ need, u32* __restrict__ prev,
            u32* __restrict__ cur, u32* __restrict__ dep, u8* __restrict__ st, u32* __restrict__ ctl) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        const u32 o = ops[j];
        const u32 len = 2 * lens[o];
        const u8* k = keys + (u64)o * stride;
        u32 best = 0, before = 0;
        for (int side = -1; side <= 1; side += 2) {
            const long long nb = (long long)j + side;
            if (nb < 0 || nb >= (long long)m)
                continue;
            const u32 p = ops[nb];
            const u8* q = keys + (u64)p * stride;
            const u32 lim = min(len, 2 * lens[p]);
            u32 c = 0;
            while (c < lim && key_nib(k, c) == key_nib(q, c))
                ++c;
            best = max(best, c);
            if (side < 0)
                before = c;
        }
        klen[j] = len;
        vid[j] = vlens[o] ? vbase + o : 0;
        need[j] = best;
        prev[j] = before;
        atomicAdd(&ctl[CTL_LCP], best);
        cur[j] = root;
        dep[j] = 0;
        st[j] = ST_ACTIVE;
    }
}
