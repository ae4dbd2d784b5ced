// CUBPT: an insert's leaves (insert_gpu.go launches these; bt_stage_old
// delete_gpu.go too): merges of batch keys into the touched leaves, flat
// or one warp per leaf. Part of btree.cu's program; shared code in btree.cuh.
#include "btree/btree.cuh"

// bt_merge_new: one thread per batch key i < m (grid-stride), insert only.
// Key i of group g (found by its batch start, the hi half of the scanned
// gSum) goes to merged position pos[i] (old keys below it) + the batch's
// new keys below it in the leaf (lo halves of the scanned packed and gSum)
// within the group's merged run at gc[g] (scanned merged sizes).
extern "C" __global__ void bt_merge_new(const u64 *k, const u64 *v, u64 m, u64 G, const u64 *gSum,
                                        const u64 *packed, const u32 *pos, const u64 *gc, u64 *mk, u64 *mv) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x) {
        u64 g = last_le_hi(gSum, G, i);
        u64 r = pos[i] + (LO(packed[i]) - LO(gSum[g]));
        mk[gc[g] + r] = k[i];
        mv[gc[g] + r] = v[i];
    }
}

// bt_stage_old: one thread per old entry e < nOld of the touched leaves,
// flattened in group order (grid-stride tiles of a block, the group found
// by block_groups). The group's old entries start at
// gc[g] + sign * lo(gSum[g]) (insert: the merged offset minus the new keys
// before it; delete: the kept offset plus the found keys before it). The
// entry is dropped when the batch holds its key (insert: the new value
// wins; delete: removed); else it goes to out at gc[g] + its index +
// (insert) the new batch keys below it or - (delete) the found ones. Old
// entries beyond the count are never read, so stale words stay as in the
// CPU engine.
extern "C" __global__ void bt_stage_old(u64 nOld, u64 G, int del, const u64 *k, const u64 *gSum,
                                        const u64 *packed, const u64 *gc, const u32 *gLeaf, u32 order,
                                        const u64 *keys, const u64 *slots, u64 *ok, u64 *ov) {
    __shared__ u64 bracket[2];
    GroupOff o = {gc, ALL64, gSum, del};
    TILE_LOOP(nOld) {
        // Largest g with oldOff(g) <= e; oldOff strictly increases (every
        // touched leaf has an old entry).
        u64 g = block_groups(o, G, tile, nOld, bracket);
        u64 e = tile + threadIdx.x;
        if (e >= nOld) continue;
        u64 oldOff = o.at(g);
        u64 j = e - oldOff;
        u64 at = (u64)gLeaf[g] * order + j;
        u64 key = keys[at];
        u64 ks = HI(gSum[g]), ke = HI(gSum[g + 1]);
        u64 a = ks, b = ke; // first batch key >= key
        while (a < b) {
            u64 mid = (a + b) >> 1;
            if (k[mid] < key) a = mid + 1; else b = mid;
        }
        if (a < ke && k[a] == key) continue;
        u64 below = LO(packed[a]) - LO(gSum[g]);
        u64 r = del ? j - below : j + below;
        ok[gc[g] + r] = key;
        ov[gc[g] + r] = slots[at];
    }
}

// bt_write_leaves: one thread per merged entry r < total (grid-stride
// tiles, the group found by block_groups), insert only. Entry r of group
// g (largest g with gc[g] <= r) is item
// r - gc[g] of the group's c entries split into p pieces (the CPU
// engine's share()); it goes to its piece's slot. The thread of a piece's
// slot 0 writes the piece's count, kind, links (piece 0 keeps the leaf's
// parent and prev; the last piece takes the leaf's old next and, when the
// leaf split, becomes that leaf's prev); the thread of its last slot
// records the piece's id and max key in chId, chMax at the piece's place
// (hi of gp[g] + q). Every word has one writer.
extern "C" __global__ void bt_write_leaves(u64 total, u64 G, const u64 *gc, const u64 *gp, const u32 *gLeaf,
                                           const u32 *oldNext, const u64 *mk, const u64 *mv, u32 first,
                                           u32 order, u64 *keys, u64 *slots, u32 *count, u32 *parent,
                                           u32 *next, u32 *prev, u8 *kind, u32 *chId, u64 *chMax) {
    __shared__ u64 bracket[2];
    TILE_LOOP(total) {
        u64 g = block_groups(GroupOff{gc, ALL64, nullptr, 0}, G, tile, total, bracket);
        u64 r = tile + threadIdx.x;
        if (r >= total) continue;
        u64 c = gc[g + 1] - gc[g];
        u64 p = HI(gp[g + 1]) - HI(gp[g]);
        u64 q, s, size;
        part_of(r - gc[g], c, p, &q, &s, &size);
        u32 leaf = gLeaf[g];
        u32 xo = LO(gp[g]);
        u32 id = piece_id(leaf, first, xo, q);
        u64 at = (u64)id * order + s;
        keys[at] = mk[r];
        slots[at] = mv[r];
        if (s == 0) {
            put_head(count, kind, id, size, KIND_LEAF);
            if (q > 0) {
                parent[id] = parent[leaf];
                prev[id] = piece_id(leaf, first, xo, q - 1);
            }
            if (q + 1 < p) {
                next[id] = piece_id(leaf, first, xo, q + 1);
            } else {
                next[id] = oldNext[g];
                if (p > 1 && oldNext[g] != NIL) prev[oldNext[g]] = id;
            }
        }
        if (s + 1 == size) {
            chId[HI(gp[g]) + q] = id;
            chMax[HI(gp[g]) + q] = mk[r];
        }
    }
}

// MERGE_LANE_ENTRIES is the most old entries a lane of the bt_merge_leaves_*
// kernels holds in registers: they take trees of order up to 32 * it
// (mergeWarpMaxOrder in insert_gpu.go).
#define MERGE_LANE_ENTRIES 8

// merge_put writes merged entry r (key, and value unless noVal) of touched
// leaf g, whose c merged entries are split into p pieces (the CPU engine's
// share()), as bt_write_leaves does: the entry goes to its piece's slot;
// the lane that writes a piece's slot 0 writes its head and links, the one
// that writes its last slot records the piece's id and max key at its
// place rb + q. It returns the entry's word index in keys and slots.
// Sizes are 32-bit: a leaf's merged entries are at most order + 2048
// (mergeWarpMaxKeys), and places fit as the scans' halves do.
__device__ __forceinline__ u64 merge_put(u32 r, u64 key, u64 val, bool noVal, u32 c, u32 p, u32 leaf, u32 first,
                                         u32 xo, u32 rb, u32 up, u32 onext, u32 order, u64 *keys, u64 *slots,
                                         u32 *count, u32 *parent, u32 *next, u32 *prev, u8 *kind, u32 *chId,
                                         u64 *chMax) {
    u32 q, s, size;
    part_of32(r, c, p, &q, &s, &size);
    u32 id = piece_id(leaf, first, xo, q);
    u64 at = (u64)id * order + s;
    keys[at] = key;
    if (!noVal) slots[at] = val;
    if (s == 0) {
        put_head(count, kind, id, size, KIND_LEAF);
        if (q > 0) {
            parent[id] = up;
            prev[id] = piece_id(leaf, first, xo, q - 1);
        }
        if (q + 1 < p) {
            next[id] = piece_id(leaf, first, xo, q + 1);
        } else {
            next[id] = onext;
            if (p > 1 && onext != NIL) prev[onext] = id;
        }
    }
    if (s + 1 == size) {
        chId[(u64)rb + q] = id;
        chMax[(u64)rb + q] = key;
    }
    return at;
}

// merge_leaves is the body of bt_merge_leaves_E (E = 1, 2, 4, 8): one warp
// per touched leaf g < G (grid-stride over warps), insert only, for trees
// of order <= 32 * E: the work of bt_merge_new, bt_stage_old and
// bt_write_leaves in one pass, with no staging of the merged entries.
//
// Thread mapping: lane l holds the leaf's old entries l, l + 32, ... (E
// registers each, so a smaller order class keeps fewer registers and more
// warps in flight) and the group's batch keys ks + l, ks + l + 32, ... one
// chunk of 32 at a time. Latency: the group's words (gLeaf, gc, gp, gSum,
// oldNext) are loaded together, then the leaf's entries and the first
// chunk of batch keys together; nothing else is loaded on the common path
// (a group of at most 32 batch keys), so a warp waits on two rounds of
// loads instead of a chain of binary-search loads per entry.
//
// Ranks: an old entry's rank is its index j plus the batch's new keys
// below it, LO(packed[ks + L]) - LO(gSum[g]) where L counts the group's
// batch keys below it (every lane compares its entries with each batch key
// of the chunk, broadcast by a shuffle); LO(packed[ke]) is LO(gSum[g + 1]).
// An old entry whose key the batch holds is dropped (the batch's value
// wins). A batch key's rank is pos[i] + LO(packed[i]) - LO(gSum[g]). These
// are bt_stage_old's and bt_merge_new's ranks, so the result is
// bt_write_leaves' word for word.
//
// Values: with vAt == nullptr a batch key's value is v[i], or with vSel
// v[vSel[i]] (the batch's values as uploaded, gathered here by the kept
// positions); with vAt, v is not read, the batch key's slot is left for
// bt_scatter_values, and the slot's word index goes to vAt[i] (the batch's
// values may still be on their way to the device while the leaves are
// merged).
//
// An old entry that keeps its slot (one piece, no batch key below it, not
// the piece's first or last entry, which write the head and the change)
// is not written again.
//
// Invariant: every read of the leaf (its entries, count, parent) is done
// before __syncwarp, every write to it after; no other warp reads it. A
// group of many keys (a skewed batch) serializes on one warp: the launcher
// takes these kernels only when every group's batch keys are few.
template <int E>
__device__ __forceinline__ void merge_leaves(u64 G, const u64 *k, const u64 *v, const u64 *gSum, const u64 *packed,
                                             const u32 *pos, const u64 *gc, const u64 *gp, const u32 *gLeaf,
                                             const u32 *oldNext, u32 first, u32 order, u64 *keys, u64 *slots,
                                             u32 *count, u32 *parent, u32 *next, u32 *prev, u8 *kind, u32 *chId,
                                             u64 *chMax, const u32 *vSel, u64 *vAt) {
    const bool noVal = vAt != nullptr;
    const u32 lane = threadIdx.x & (WARP - 1);
    const u64 warps = (u64)gridDim.x * (blockDim.x / WARP);
    for (u64 g = (blockIdx.x * (u64)blockDim.x + threadIdx.x) / WARP; g < G; g += warps) {
        u32 leaf = gLeaf[g];
        u32 onext = oldNext[g];
        u64 gs0 = gSum[g], gs1 = gSum[g + 1], gp0 = gp[g];
        u32 c = (u32)(gc[g + 1] - gc[g]);
        u32 p = HI(gp[g + 1]) - HI(gp0);
        u32 xo = LO(gp0), rb = HI(gp0);
        u32 ks = HI(gs0), ke = HI(gs1), nb = ke - ks;
        u32 newBefore = LO(gs0), newEnd = LO(gs1);
        u64 base = (u64)leaf * order;
        u32 c0 = count[leaf];
        u32 up = parent[leaf];
        u64 ok[E], ov[E];
#pragma unroll
        for (int t = 0; t < E; t++) {
            u32 j = lane + WARP * t;
            ok[t] = 0;
            ov[t] = 0;
            if (j < c0) {
                ok[t] = keys[base + j];
                ov[t] = slots[base + j];
            }
        }
        // The first chunk of batch keys, loaded with the leaf's entries.
        u64 i = (u64)ks + lane;
        bool in = lane < nb;
        u64 bk = in ? k[i] : 0, bv = in && !noVal ? v[vSel != nullptr ? (u64)vSel[i] : i] : 0;
        u32 bpos = in ? pos[i] : 0, bpk = in ? LO(packed[i]) : newEnd;
        __syncwarp();
        u32 less[E];
        bool hit[E];
#pragma unroll
        for (int t = 0; t < E; t++) {
            less[t] = 0;
            hit[t] = false;
        }
        for (u32 cs = 0; cs < nb; cs += WARP) { // warp-uniform trip count; cs is the chunk's offset in the group
            if (cs != 0) {
                i = (u64)ks + cs + lane;
                in = cs + lane < nb;
                bk = in ? k[i] : 0;
                bv = in && !noVal ? v[vSel != nullptr ? (u64)vSel[i] : i] : 0;
                bpos = in ? pos[i] : 0;
                bpk = in ? LO(packed[i]) : newEnd;
            }
            u32 n = min((u32)WARP, nb - cs);
            for (u32 b = 0; b < n; b++) {
                u64 kb = __shfl_sync(FULL_MASK, bk, b);
#pragma unroll
                for (int t = 0; t < E; t++) {
                    less[t] += kb < ok[t] ? 1 : 0;
                    hit[t] = hit[t] || kb == ok[t];
                }
            }
            if (in) {
                u64 at = merge_put(bpos + (bpk - newBefore), bk, bv, noVal, c, p, leaf, first, xo, rb, up, onext, order,
                                   keys, slots, count, parent, next, prev, kind, chId, chMax);
                if (noVal) vAt[i] = at;
            }
        }
#pragma unroll
        for (int t = 0; t < E; t++) {
            u32 j = lane + WARP * t;
            u32 L = less[t];
            u32 below;
            if (nb <= WARP) { // warp-uniform: every lane takes the shuffle
                u32 x = __shfl_sync(FULL_MASK, bpk, L & (WARP - 1));
                below = (L < nb ? x : newEnd) - newBefore;
            } else {
                below = (j < c0 && !hit[t] && L < nb ? LO(packed[(u64)ks + L]) : newEnd) - newBefore;
            }
            if (j >= c0 || hit[t]) continue; // past the count, or the batch's value wins
            if (p == 1 && below == 0 && j != 0 && j + 1 != c) continue; // in place already
            merge_put(j + below, ok[t], ov[t], false, c, p, leaf, first, xo, rb, up, onext, order, keys, slots, count,
                      parent, next, prev, kind, chId, chMax);
        }
        __syncwarp(); // the warp's next group starts after every lane is done with this one
    }
}

// bt_merge_leaves_E: merge_leaves for trees of order <= 32 * E (the
// launcher picks the smallest E that holds the order). NVRTC 11.8 gives
// them 56, 64, 78 and 102 registers a thread for sm_90, no spills. A
// budget of 48 registers for E = 2 (__launch_bounds__(256, 5): 40 warps
// an SM instead of 32, 40 bytes of spills a thread) measured no faster on
// an H200 (BENCHMARKS.md).
#define MERGE_LEAVES_KERNEL(E)                                                                                        \
    extern "C" __global__ void bt_merge_leaves_##E(u64 G, const u64 *k, const u64 *v, const u64 *gSum,                \
                                                   const u64 *packed, const u32 *pos, const u64 *gc, const u64 *gp,   \
                                                   const u32 *gLeaf, const u32 *oldNext, u32 first, u32 order,        \
                                                   u64 *keys, u64 *slots, u32 *count, u32 *parent, u32 *next,         \
                                                   u32 *prev, u8 *kind, u32 *chId, u64 *chMax, const u32 *vSel,       \
                                                   u64 *vAt) {                                                        \
        merge_leaves<E>(G, k, v, gSum, packed, pos, gc, gp, gLeaf, oldNext, first, order, keys, slots, count, parent, \
                        next, prev, kind, chId, chMax, vSel, vAt);                                                    \
    }
MERGE_LEAVES_KERNEL(1)
MERGE_LEAVES_KERNEL(2)
MERGE_LEAVES_KERNEL(4)
MERGE_LEAVES_KERNEL(8)
