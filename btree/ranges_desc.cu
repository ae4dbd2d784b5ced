// ranges_desc.cu: range queries in descending key order
// (ranges_desc_gpu.go launches them). Part of the program btree.cu; the
// helpers it uses (seek) and the layout's defines are in btree.cuh.
#pragma once
#include "btree/btree.cuh"

// bt_range_desc: one thread per range query [lo[i], hi[i]] (inclusive
// bounds; grid-stride), at most limit pairs (0: no limit), largest key
// first: it seeks hi[i] (the first leaf whose max key is >= hi[i], else
// the last leaf), starts at the last entry <= hi[i] and walks the entries
// down and the leaf chain back along prev. With write == 0 it stores the
// number of pairs in counts[i]; with write == 1 it writes them to
// outK/outV from offs[i] (the exclusive scan of the counts). Invariant:
// entries [0, e) of the current leaf are keys <= hi[i] not yet visited,
// and every leaf before it holds only smaller keys (find_leaf takes the
// first child whose max key is >= hi[i], so the leaves before the sought
// one end below hi[i]). The tree must not be empty.
extern "C" __global__ void bt_range_desc(const u64 *lo, const u64 *hi, u64 nq, u64 limit, u32 root, u32 height,
                                         u32 order, const u64 *keys, const u64 *slots, const u32 *count,
                                         const u32 *prev, int write, u64 *counts, const u64 *offs, u64 *outK,
                                         u64 *outV) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nq; i += (u64)gridDim.x * blockDim.x) {
        u64 a = lo[i], b = hi[i];
        u64 got = 0;
        u64 w = write ? offs[i] : 0;
        if (a <= b) {
            u64 base;
            u32 c, e;
            u32 leaf = seek(b, root, height, order, keys, slots, count, &base, &c, &e);
            if (e < c && keys[base + e] == b) e++;
            bool done = false;
            while (!done) {
                for (; e > 0; e--) {
                    u64 key = keys[base + e - 1];
                    if (key < a || (limit != 0 && got == limit)) {
                        done = true;
                        break;
                    }
                    if (write) {
                        outK[w + got] = key;
                        outV[w + got] = slots[base + e - 1];
                    }
                    got++;
                }
                if (done) break;
                leaf = prev[leaf];
                if (leaf == NIL) break;
                base = (u64)leaf * order;
                e = count[leaf];
            }
        }
        if (!write) counts[i] = got;
    }
}
