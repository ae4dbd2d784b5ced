// CUBPT: where a batch's keys fall (locate_gpu.go launches these): the
// leaf of each key, the touched leaves' sizes and the most batch keys of one
// leaf. Part of btree.cu's program; shared code in btree.cuh.
#include "btree/btree.cuh"

// bt_locate: one thread per i < bound (grid-stride), where bound (known
// to the host) is at least m = *nm, the batch's kept keys counted on the
// device by the dedupe, so the host need not read m first. For a key of
// the strictly increasing k[0:m): leafOf[i] = the key's leaf (find_leaf),
// pos[i] = the number of the leaf's keys below it, packed[i] = 1<<32 |
// flag where flag is "in the leaf" (del != 0) or "not in the leaf"
// (insert). Every i in [m, bound) gets leafOf NIL and packed 0: a last
// run of the reduction by leaf that bt_leaf_sizes leaves out (leaves are
// never NIL). Thread 0 also zeroes packed[bound], so that packed scans
// over bound + 1 elements (the totals at m and at bound).
extern "C" __global__ void bt_locate(const u64 *k, u64 bound, const u32 *nm, u32 root, u32 height, u32 order,
                                     int del, const u64 *keys, const u64 *slots, const u32 *count,
                                     u32 *leafOf, u32 *pos, u64 *packed) {
    const u64 m = *nm;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < bound; i += (u64)gridDim.x * blockDim.x) {
        if (i == 0) packed[bound] = 0;
        if (i >= m) {
            leafOf[i] = NIL;
            pos[i] = 0;
            packed[i] = 0;
            continue;
        }
        u64 key = k[i], base;
        u32 c, j;
        u32 leaf = seek(key, root, height, order, keys, slots, count, &base, &c, &j);
        bool hit = j < c && keys[base + j] == key;
        leafOf[i] = leaf;
        pos[i] = j;
        packed[i] = (1ull << 32) | (u64)((del != 0) == hit ? 1 : 0);
    }
}

// bt_leaf_sizes: one thread per g <= bound (grid-stride), where bound
// (known to the host) is at least the touched leaves G, counted on the
// device: nG[0] is the number of runs of the reduction by leaf of
// bt_locate's output (gLeaf, gSum; hi: batch keys of the leaf, lo:
// flagged keys), a last run of NIL not a leaf; thread 0 writes G to
// nG[1]. For g < G: writes the leaf's new entry count c (insert: old +
// new keys; delete: old - found) to gc[g], its pieces and extra new nodes
// (hi: pieces, lo: pieces - 1 when above 1) to gp[g], its old max key and
// old next leaf; every other g <= bound zeroes gSum[g], gc[g], gp[g], so
// that scans over bound + 1 elements hold the totals at G and at bound.
extern "C" __global__ void bt_leaf_sizes(u64 bound, u32 *nG, const u32 *gLeaf, u64 *gSum, u32 order,
                                         u32 fill, int del, const u64 *keys, const u32 *count,
                                         const u32 *next, u64 *gc, u64 *gp, u64 *oldMax, u32 *oldNext) {
    u64 G = nG[0];
    if (G > 0 && gLeaf[G - 1] == NIL) G--;
    if (blockIdx.x == 0 && threadIdx.x == 0) nG[1] = (u32)G;
    for_touched(bound, G, gSum, gc, gp, [&](u64 g) {
        u32 leaf = gLeaf[g];
        u64 c0 = count[leaf];
        u64 f = LO(gSum[g]);
        size_touched(g, leaf, c0, del ? c0 - f : c0 + f, 0, order, fill, keys, gc, gp, oldMax);
        oldNext[g] = next[leaf];
    });
}

// bt_max_hi: a grid-stride loop over g < G (a small grid: the launcher
// caps it) keeps each thread's largest HI(sum[g]); the warp's largest
// (shuffles over the full warp, after the loop every lane takes part in)
// goes to *out with one atomicMax per warp. *out must be zero (or a lower
// bound) beforehand. Over the unscanned reduction by leaf, it is the most
// batch keys of one touched leaf (insert_gpu.go picks bt_merge_leaves by
// it). One atomic per warp, not per group: a million atomics on one word
// serialize for milliseconds.
extern "C" __global__ void bt_max_hi(u64 G, const u64 *sum, u64 *out) {
    u32 m = 0;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        u32 h = HI(sum[g]);
        m = h > m ? h : m;
    }
    for (int d = WARP / 2; d > 0; d >>= 1) {
        u32 x = __shfl_xor_sync(FULL_MASK, m, d);
        m = x > m ? x : m;
    }
    if ((threadIdx.x & (WARP - 1)) == 0 && m > 0) atomicMax(out, (u64)m);
}
