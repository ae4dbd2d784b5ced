// ranges.cu: range queries, ascending and descending (ranges_gpu.go
// launches them). Part of the program btree.cu; the helpers it uses
// (lower_bound, find_leaf) and the layout's defines are in btree.cuh.
#pragma once
#include "btree/btree.cuh"

// A query's walk: ascending (desc == 0), from the first key >= lo along
// the leaf chain's next links; descending (desc != 0), from the last key
// <= hi along the prev links (the kernels take the chain to follow as
// link: the tree's next or prev array). A walk position s in a leaf of c
// entries is where the walk continues: ascending, its t-th entry is s + t
// (t < c - s); descending, s - 1 - t (t < s); on the following leaves s
// is 0 (ascending) or the leaf's count (descending). Descending, every
// leaf before hi's holds only keys < hi: find_leaf takes the first child
// whose max key is >= hi.

// upper_bound returns the first j < c with k[j] > key, or c.
__device__ __forceinline__ u32 upper_bound(const u64 *k, u32 c, u64 key) {
    u32 lo = 0, hi = c;
    while (lo < hi) {
        u32 mid = (lo + hi) >> 1;
        if (k[mid] <= key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// range_seek finds where the walk of query [a, b] (a <= b) in direction
// desc begins: it returns the leaf (find_leaf of a, or of b descending)
// and sets *base to its first slot, *c to its count and *s to the walk
// position (the first key >= a, or the end of the keys <= b descending).
__device__ __forceinline__ u32 range_seek(u64 a, u64 b, int desc, u32 root, u32 height, u32 order,
                                          const u64 *keys, const u64 *slots, const u32 *count, u64 *base,
                                          u32 *c, u32 *s) {
    u32 leaf = find_leaf(desc ? b : a, root, height, order, keys, slots, count);
    *base = (u64)leaf * order;
    *c = count[leaf];
    *s = desc ? upper_bound(keys + *base, *c, b) : lower_bound(keys + *base, *c, a);
    return leaf;
}

// bt_range (gpuTree.rangeForm rangeThread): one thread per range query
// [lo[i], hi[i]] (grid-stride), at most limit pairs (0: no limit), walking
// the leaf chain in direction desc from range_seek's position (link: next,
// or prev descending). With write == 0 it stores the number of pairs in
// counts[i]; with write == 1 it writes them to outK/outV from offs[i] (the
// exclusive scan of the counts), in walk order. The tree must not be
// empty.
extern "C" __global__ void bt_range(const u64 *lo, const u64 *hi, u64 nq, u64 limit, u32 root, u32 height,
                                    u32 order, const u64 *keys, const u64 *slots, const u32 *count,
                                    const u32 *link, int desc, int write, u64 *counts, const u64 *offs,
                                    u64 *outK, u64 *outV) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nq; i += (u64)gridDim.x * blockDim.x) {
        u64 a = lo[i], b = hi[i];
        u64 got = 0;
        u64 w = write ? offs[i] : 0;
        if (a <= b) {
            u64 base;
            u32 c, s;
            u32 leaf = range_seek(a, b, desc, root, height, order, keys, slots, count, &base, &c, &s);
            bool done = false;
            while (!done) {
                u32 m = desc ? s : c - s;
                for (u32 t = 0; t < m; t++) {
                    u64 at = desc ? base + s - 1 - t : base + s + t;
                    u64 key = keys[at];
                    if ((desc ? key < a : key > b) || (limit != 0 && got == limit)) {
                        done = true;
                        break;
                    }
                    if (write) {
                        outK[w + got] = key;
                        outV[w + got] = slots[at];
                    }
                    got++;
                }
                if (done) break;
                leaf = link[leaf];
                if (leaf == NIL) break;
                base = (u64)leaf * order;
                c = count[leaf];
                s = desc ? c : 0;
            }
        }
        if (!write) counts[i] = got;
    }
}

// ---------------------------------------------------------------------------
// Range queries, one warp per query, either direction (ranges_gpu.go
// launches them when gpuTree.rangeForm is rangeWarp; slower than bt_range
// at 100M keys on an H200, BENCHMARKS.md). The 32 lanes of a warp take one query: they descend together (a node of at most
// WARP_SCAN_MAX keys is searched with coalesced loads of 32 keys and a
// ballot; a larger one by the same binary search on every lane, whose
// loads are broadcasts), then read the leaf chain 32 entries at a time with
// coalesced loads, the pairs in range being a prefix of the lanes (keys are
// sorted) counted with one ballot. Every loop bound is the same on every
// lane of the warp, so the warp never diverges around a shuffle or ballot.

#define WARP_SCAN_MAX 256

// warp_lower_bound returns, on every lane, the first j < c with k[j] >= key,
// or c.
__device__ __forceinline__ u32 warp_lower_bound(const u64 *k, u32 c, u64 key, u32 lane) {
    if (c > WARP_SCAN_MAX) return lower_bound(k, c, key);
    for (u32 r = 0; r < c; r += WARP) {
        u32 idx = r + lane;
        bool below = idx < c && k[idx] < key;
        u32 n = __popc(__ballot_sync(FULL_MASK, below));
        if (n < WARP) return r + n;
    }
    return c;
}

// warp_find_leaf is find_leaf with each node searched by warp_lower_bound.
__device__ __forceinline__ u32 warp_find_leaf(u64 key, u32 root, u32 height, u32 order, const u64 *keys,
                                              const u64 *slots, const u32 *count, u32 lane) {
    u32 node = root;
    for (u32 h = 1; h < height; h++) {
        u64 base = (u64)node * order;
        u32 c = count[node];
        u32 j = warp_lower_bound(keys + base, c, key, lane);
        if (j == c) j = c - 1;
        node = (u32)slots[base + j];
    }
    return node;
}

// warp_upper_bound returns, on every lane, the first j < c with k[j] > key,
// or c (keys are distinct).
__device__ __forceinline__ u32 warp_upper_bound(const u64 *k, u32 c, u64 key, u32 lane) {
    u32 j = warp_lower_bound(k, c, key, lane);
    return j < c && k[j] == key ? j + 1 : j;
}

// bt_range_warp: one warp per range query [lo[i], hi[i]] (warps grid-stride
// over queries; blockDim.x a multiple of 32), at most limit pairs (0: no
// limit), walking in direction desc (link: next, or prev descending).
// With write == 0 the warp descends from the root, stores where the walk
// starts (leaf << 32 | walk position, as range_seek) in start[i] and the
// number of pairs in counts[i]; with write == 1 it starts at start[i],
// with no descent, and writes the pairs to outK/outV from offs[i] (the
// exclusive scan of the counts), lane l the l-th pair of each 32. The
// tree must not be empty. Invariant: the pairs a query writes are those
// bt_range finds, in the same order.
extern "C" __global__ void bt_range_warp(const u64 *lo, const u64 *hi, u64 nq, u64 limit, u32 root, u32 height,
                                         u32 order, const u64 *keys, const u64 *slots, const u32 *count,
                                         const u32 *link, int desc, int write, u64 *counts, u64 *start,
                                         const u64 *offs, u64 *outK, u64 *outV) {
    const u32 lane = threadIdx.x % WARP;
    const u64 warps = (u64)gridDim.x * blockDim.x / WARP;
    for (u64 i = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / WARP; i < nq; i += warps) {
        u64 a = lo[i], b = hi[i];
        if (a > b) {
            if (!write && lane == 0) {
                counts[i] = 0;
                start[i] = (u64)NIL << 32;
            }
            continue;
        }
        u32 leaf, s;
        if (write) {
            leaf = (u32)(start[i] >> 32);
            s = (u32)start[i];
        } else {
            leaf = warp_find_leaf(desc ? b : a, root, height, order, keys, slots, count, lane);
            const u64 *k = keys + (u64)leaf * order;
            s = desc ? warp_upper_bound(k, count[leaf], b, lane) : warp_lower_bound(k, count[leaf], a, lane);
            if (lane == 0) start[i] = ((u64)leaf << 32) | s;
        }
        u64 got = 0, w = write ? offs[i] : 0;
        for (;;) {
            u64 base = (u64)leaf * order;
            u32 m = desc ? s : count[leaf] - s; // the leaf's entries left in walk order
            bool done = false;
            for (u32 r = 0; r < m; r += WARP) {
                u32 t = r + lane;
                bool valid = t < m;
                u64 at = desc ? base + s - 1 - t : base + s + t;
                u64 k = valid ? keys[at] : 0;
                u32 n = __popc(__ballot_sync(FULL_MASK, valid && (desc ? k >= a : k <= b)));
                u64 take = n;
                if (limit != 0 && got + take > limit) take = limit - got;
                if (write && lane < take) {
                    outK[w + got + lane] = k;
                    outV[w + got + lane] = slots[at];
                }
                got += take;
                u32 avail = m - r < WARP ? m - r : WARP;
                if (take < avail || (limit != 0 && got == limit)) {
                    done = true;
                    break;
                }
            }
            if (done) break;
            leaf = link[leaf];
            if (leaf == NIL) break;
            s = desc ? count[leaf] : 0;
        }
        if (!write && lane == 0) counts[i] = got;
    }
}

// ---------------------------------------------------------------------------
// Range queries in one descent (ranges_gpu.go's default, both directions):
// a thread per query finds where its pairs start and counts them; after an
// exclusive scan of the counts, a warp per query copies them with
// coalesced loads and stores, following the leaf chain from the start
// without a second descent and without comparing keys.

// bt_range_start: one thread per range query [lo[i], hi[i]] (grid-stride),
// at most limit pairs (0: no limit), in direction desc (link: next, or
// prev descending): it descends once (range_seek), stores where the
// query's pairs start (leaf << 32 | walk position; NIL << 32 for an empty
// range lo > hi) in start[i] and their number in counts[i], counting each
// leaf's keys in range with one binary search for the far bound. The tree
// must not be empty. Invariant: the counts[i] entries of the leaf chain
// walked from start[i] are exactly the pairs bt_range finds for query i.
extern "C" __global__ void bt_range_start(const u64 *lo, const u64 *hi, u64 nq, u64 limit, u32 root, u32 height,
                                          u32 order, const u64 *keys, const u64 *slots, const u32 *count,
                                          const u32 *link, int desc, u64 *start, u64 *counts) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nq; i += (u64)gridDim.x * blockDim.x) {
        u64 a = lo[i], b = hi[i];
        u64 got = 0, st = (u64)NIL << 32;
        if (a <= b) {
            u64 base;
            u32 c, s;
            u32 leaf = range_seek(a, b, desc, root, height, order, keys, slots, count, &base, &c, &s);
            st = ((u64)leaf << 32) | s;
            for (;;) {
                // The leaf's pairs in range: [s, e) ascending (keys before
                // s are < a <= b), [e, s) descending (keys from s are > b).
                u32 e = desc ? lower_bound(keys + base, s, a) : upper_bound(keys + base, c, b);
                got += desc ? s - e : e - s;
                if (limit != 0 && got >= limit) {
                    got = limit;
                    break;
                }
                if (desc ? e > 0 : e < c) break; // a key beyond the far bound in this leaf
                leaf = link[leaf];
                if (leaf == NIL) break;
                base = (u64)leaf * order;
                c = count[leaf];
                s = desc ? c : 0;
            }
        }
        start[i] = st;
        counts[i] = got;
    }
}

// bt_range_copy: one warp per query i < nq (warps grid-stride; blockDim.x
// a multiple of 32): the query's offs[i+1] - offs[i] pairs, read along the
// leaf chain in direction desc (link: next, or prev descending) from
// start[i], go to outK/outV from offs[i], lane l taking entries l, l+32,
// ... of each leaf's run in walk order (coalesced: descending, the lanes
// read consecutive words backwards). offs is the exclusive scan of
// bt_range_start's counts. Every loop bound is the same on every lane.
// Invariant: each output word has one writer, and query i's pairs fill
// [offs[i], offs[i+1]) in walk order.
extern "C" __global__ void bt_range_copy(u64 nq, u32 order, const u64 *keys, const u64 *slots, const u32 *count,
                                         const u32 *link, int desc, const u64 *start, const u64 *offs, u64 *outK,
                                         u64 *outV) {
    const u32 lane = threadIdx.x % WARP;
    const u64 warps = (u64)gridDim.x * blockDim.x / WARP;
    for (u64 i = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / WARP; i < nq; i += warps) {
        u64 w = offs[i], n = offs[i + 1] - w;
        if (n == 0) continue;
        u32 leaf = (u32)(start[i] >> 32), s = (u32)start[i];
        for (;;) {
            u32 m = desc ? s : count[leaf] - s;
            u64 take = m < n ? m : n;
            u64 base = (u64)leaf * order;
            for (u64 t = lane; t < take; t += WARP) {
                u64 at = desc ? base + s - 1 - t : base + s + t;
                outK[w + t] = keys[at];
                outV[w + t] = slots[at];
            }
            w += take;
            n -= take;
            if (n == 0) break;
            leaf = link[leaf];
            s = desc ? count[leaf] : 0;
        }
    }
}

// bt_range_total: one thread, after the exclusive scan offs[0..n] of a
// chunk's n counts (ranges_piped_gpu.go): copies the chunk's pair count
// offs[n] to tot, host memory mapped into the device, which the host
// reads once the event after this kernel has fired (a store, not a
// readback: a device-to-host copy would queue behind the earlier chunks'
// downloads on the copy engine). Invariant: *tot is the chunk's total.
extern "C" __global__ void bt_range_total(u64 n, const u64 *offs, volatile u64 *tot) {
    if (threadIdx.x || blockIdx.x) return;
    *tot = offs[n];
}

// bt_range_qout: one thread per query i < n of a chunk (grid-stride):
// qout[i] = base + offs[i+1], the Result's offset Offsets[a+i+1] of the
// chunk's query i when the chunk's pairs follow base pairs of the earlier
// chunks (offs the chunk's exclusive scan). Invariant: each word has one
// writer.
extern "C" __global__ void bt_range_qout(u64 n, const u64 *offs, u64 base, u64 *qout) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        qout[i] = base + offs[i + 1];
}
