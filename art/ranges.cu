// ranges.cu: Bounded range and prefix queries in one walk: aq_cands,
// aq_trim, aq_pairs (ranges_gpu.go launches them, in this order, with
// exclusive scans of the per-query counts between aq_trim and aq_pairs;
// ranges_piped_gpu.go launches aq_pairs for each chunk of a pipelined
// call).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh, the
// cursor and the seeks in iterate.cu.
//
// The walk never reads a leaf: a cursor step reads inner nodes and the
// root array only, so a thread's chain of dependent loads is the nodes it
// crosses. The leaves (bounds, lengths, keys, values) are read afterwards
// by a warp per query, 32 of them at once.
#pragma once
#include "art/art.cuh"
#include "art/iterate.cu"

// aq_cands: one thread per walk i < Q, taking query q = perm[i] (perm the
// queries sorted by start key, aq_order_keys) or q = i (perm null): from
// the query's start (seek_ge of lo ascending, seek_lt of hi descending)
// it steps the cursor up to limit times and writes the leaves it meets to
// slots[q*limit + j] in answer order, their number to ccnt[q]. Invariant:
// slots[q*limit .. q*limit+ccnt[q]) are the query's first leaves from its
// start, ascending (descending), the far bound not yet applied; no other
// slot is written.
extern "C" __global__ void aq_cands(const Tree *t, u64 Q, const u32 *perm, const u8 *lod, const u32 *loo,
                                    const u8 *hid, const u32 *hio, const u8 *hashi, u64 limit, int desc, u64 *slots,
                                    u32 *ccnt) {
    GRID_STRIDE(i, Q) {
        u64 q = perm ? (u64)perm[i] : i;
        Cur cur = desc ? seek_lt(t, hid + hio[q], hio[q + 1] - hio[q], hashi[q])
                       : seek_ge(t, lod + loo[q], loo[q + 1] - loo[q]);
        u64 *out = slots + q * limit;
        u64 c = 0;
        while (c < limit) {
            u64 l = desc ? cur_prev(t, &cur) : cur_next(t, &cur);
            if (!l) break;
            out[c++] = l;
        }
        ccnt[q] = (u32)c;
    }
}

// warp_sum is the sum of v over the 32 lanes of a warp (every lane gets it).
__device__ __forceinline__ u64 warp_sum(u64 v) {
    for (int d = WARP / 2; d > 0; d >>= 1) v += __shfl_xor_sync(FULL_MASK, v, d);
    return v;
}

// aq_trim: one warp per query q <= Q (warp Q writes the zeros after the
// counts, for the scans): the lanes read the query's candidates of
// aq_cands 32 at a time, each one leaf, and compare its key with the far
// bound (ascending: key < hi when the query has one; descending: key >=
// lo); a ballot gives the first candidate out of bounds. cnt[q] is the
// number of candidates before it, bytes[q] the sum of their key lengths,
// sq[q] the sum of their squares (the host tells from the three totals
// whether every key of the answer has one length: n * sum(len^2) ==
// sum(len)^2 exactly when all are equal). Invariant: the candidates
// within bounds are a prefix of the slots (the slots are in key order),
// so cnt[q] pairs from slot q*limit are exactly the query's answer.
extern "C" __global__ void aq_trim(const Tree *t, u64 Q, const u8 *lod, const u32 *loo, const u8 *hid,
                                   const u32 *hio, const u8 *hashi, u64 limit, int desc, const u64 *slots,
                                   const u32 *ccnt, u64 *cnt, u64 *bytes, u64 *sq) {
    u32 lane = threadIdx.x % WARP;
    u64 warps = (u64)gridDim.x * blockDim.x / WARP;
    for (u64 q = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / WARP; q <= Q; q += warps) {
        if (q == Q) {
            if (lane == 0) cnt[Q] = bytes[Q] = sq[Q] = 0;
            continue;
        }
        const u8 *b = desc ? lod + loo[q] : hid + hio[q];
        u32 bn = desc ? loo[q + 1] - loo[q] : hio[q + 1] - hio[q];
        bool bounded = desc || hashi[q];
        u64 n = ccnt[q], c = 0, by = 0, sqs = 0;
        for (u64 j0 = 0; j0 < n; j0 += WARP) {
            u64 j = j0 + lane;
            bool in = j < n;
            u32 kn = 0;
            if (in) {
                u64 l = slots[q * limit + j];
                kn = laux(l);
                if (bounded) {
                    int cmp = compare_keys(leaf_key(t, l), kn, b, bn);
                    in = desc ? cmp >= 0 : cmp < 0;
                }
            }
            u32 out = ~__ballot_sync(FULL_MASK, in);
            u32 k = out ? (u32)__ffs(out) - 1 : WARP; // the lanes before the first one out
            c += k;
            by += warp_sum(lane < k ? kn : 0);
            sqs += warp_sum(lane < k ? (u64)kn * kn : 0);
            if (k < WARP) break;
        }
        if (lane == 0) {
            cnt[q] = c;
            bytes[q] = by;
            sq[q] = sqs;
        }
    }
}

// copy_key copies a key of n bytes from a leaf (its record, or the arena
// at a multiple of the granule) to dst: 16 bytes a store (two 8-byte
// loads) where dst is 16-byte and the leaf 8-byte aligned (a warp writing
// keys of 16 bytes then stores consecutive 16-byte words, whole sectors),
// else 8
// bytes a load and store where both are 8-byte aligned (at dst, every key
// before it a multiple of 8 bytes long, as in answers of 8- and 16-byte
// keys), and the tail a byte at a time.
__device__ __forceinline__ void copy_key(u8 *dst, const u8 *src, u32 n) {
    u32 i = 0;
    if ((((u64)dst & 15) | ((u64)src & 7)) == 0)
        for (; i + 16 <= n; i += 16)
            *(ulonglong2 *)(dst + i) = make_ulonglong2(*(const u64 *)(src + i), *(const u64 *)(src + i + 8));
    if ((((u64)dst | (u64)src) & 7) == 0)
        for (; i + 8 <= n; i += 8) *(u64 *)(dst + i) = *(const u64 *)(src + i);
    for (; i < n; i++) dst[i] = src[i];
}

// aq_pairs: one warp per query q < Q: the lanes take the query's pairs
// 32 at a time, pair j from slot q*limit + j; an exclusive warp scan of
// the key lengths gives each key's offset from the query's first key
// offset boff[q] - boff[0]; lane j writes pair pidx[q] + j (key offset,
// key bytes, value). pidx and boff are exclusive scans of the walk's (or
// aq_trim's) cnt and bytes: scans of their own (rangesCands: boff[0] is
// 0), or the cnt and byt views of one scan of a chunk's pair counts, key
// bytes and squared lengths together (countsLayout in
// ranges_piped_gpu.go), which adds the chunk's pairs to every entry of
// byt, boff[0] that sum. A chunk of a pipelined call passes the pairs and
// key bytes of the chunks before it, pbase and kbase: the key offsets
// written are kbase plus the chunk's own, and lane 0 of query q's warp
// writes qout[q] = pbase + pidx[q+1], the Result's query offset q+1 (qout
// null: not written; the one-piece call downloads pidx). ooffs null: the
// key offsets are not written (the host writes them: every key of the
// answer has one length, which rangesCands knows from the totals before
// it launches this). okeys holds kcap bytes and a key that does not fit
// below kcap is not copied: a pipelined call queues a chunk's pairs
// before its key bytes are known, and again with room when they did not
// fit (rangesCands passes the answer's key bytes). Invariant: every output
// word has one writer (the lane of its pair, lane 0 for qout), and query
// q's pairs fill [pidx[q], pidx[q+1]) in answer order.
extern "C" __global__ void aq_pairs(const Tree *t, u64 Q, u64 limit, const u64 *slots, const u64 *pidx,
                                    const u64 *boff, u8 *okeys, u32 *ooffs, u64 *ovals, u64 pbase, u64 kbase,
                                    u64 *qout, u64 kcap) {
    u32 lane = threadIdx.x % WARP;
    u64 warps = (u64)gridDim.x * blockDim.x / WARP;
    u64 b0 = Q ? boff[0] : 0;
    for (u64 q = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / WARP; q < Q; q += warps) {
        u64 base = pidx[q], n = pidx[q + 1] - base, o = boff[q] - b0;
        if (qout && lane == 0) qout[q] = pbase + pidx[q + 1];
        for (u64 j0 = 0; j0 < n; j0 += WARP) {
            u64 j = j0 + lane;
            u64 l = j < n ? slots[q * limit + j] : 0;
            u32 kn = j < n ? laux(l) : 0;
            u32 x = kn; // inclusive scan of the lanes' key lengths
            for (int d = 1; d < WARP; d <<= 1) {
                u32 y = __shfl_up_sync(FULL_MASK, x, d);
                if (lane >= (u32)d) x += y;
            }
            if (j < n) {
                u64 at = o + x - kn;
                if (ooffs) ooffs[base + j] = (u32)(kbase + at);
                if (at + kn <= kcap) copy_key(okeys + at, leaf_key(t, l), kn);
                ovals[base + j] = leaf_value(t, l);
            }
            o += __shfl_sync(FULL_MASK, x, WARP - 1);
        }
    }
}
