// CUBPT: parent levels after a batch (propagate_gpu.go launches these):
// each touched node's parent, the parents' new sizes and their entries.
// Part of btree.cu's program; shared code in btree.cuh.
#include "btree/btree.cuh"

// bt_parent_of: one thread per touched node g < G of a level (grid-stride).
// par[g] = its parent; packed[g] = 1<<32 | its replacement count (from the
// scanned gp's high halves); slot[g] = its entry in the parent, found by
// its old max key (the parent's key for it).
extern "C" __global__ void bt_parent_of(u64 G, const u32 *node, const u64 *oldMax, const u64 *gp, u32 order,
                                        const u64 *keys, const u32 *count, const u32 *parent,
                                        u32 *par, u64 *packed, u32 *slot) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        u32 P = parent[node[g]];
        par[g] = P;
        packed[g] = (1ull << 32) | (u64)(HI(gp[g + 1]) - HI(gp[g]));
        slot[g] = lower_bound(keys + (u64)P * order, count[P], oldMax[g]);
    }
}

// bt_parent_sizes: one thread per g <= bound (grid-stride), where bound
// (the touched children, known to the host) is at least G = *nG, the
// touched parents counted on the device by the reduction, so the host
// need not read G before the launch. For g < G, pSum[g] (hi: changed
// children, lo: their replacements) is the reduction by parent of
// bt_parent_of's packed; the parent's new entries c = old - changed +
// replacements go to gc[g] (plus 1<<40 when c is 0: the parent is freed
// here, count 0 and kind free), its pieces and extra nodes to gp[g] as in
// bt_leaf_sizes, its old max key and its own parent to oldMax, up. Every
// g in [G, bound] zeroes pSum[g], gc[g], gp[g], so that exclusive scans
// over bound + 1 elements hold the totals at G and at bound.
extern "C" __global__ void bt_parent_sizes(u64 bound, const u32 *nG, const u32 *pNode, u64 *pSum, u32 order,
                                           u32 fill, const u64 *keys, u32 *count, const u32 *parent, u8 *kind,
                                           u64 *gc, u64 *gp, u64 *oldMax, u32 *up) {
    const u64 G = *nG;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g <= bound; g += (u64)gridDim.x * blockDim.x) {
        if (g >= G) {
            pSum[g] = 0;
            gc[g] = 0;
            gp[g] = 0;
            continue;
        }
        u32 P = pNode[g];
        u64 c0 = count[P];
        u64 c = c0 - HI(pSum[g]) + LO(pSum[g]);
        size_touched(g, P, c0, c, c == 0 ? 1ull << FREED_SHIFT : 0, order, fill, keys, gc, gp, oldMax);
        up[g] = parent[P];
        if (c == 0) {
            count[P] = 0;
            kind[P] = KIND_FREE;
        }
    }
}

// bt_stage_repl: one thread per replacement r < R of the level below
// (grid-stride): chId, chMax of child group g (largest g with hi(cgp[g])
// <= r) go to the staged entries of its parent group pg (largest pg with
// hi(pSum[pg]) <= g, pSum scanned) at the child's slot, shifted by the
// replacements and changed children before it in that parent.
extern "C" __global__ void bt_stage_repl(u64 R, u64 G, const u64 *cgp, const u32 *chId, const u64 *chMax,
                                         const u32 *slot, u64 PG, const u64 *pSum, const u64 *gc,
                                         u64 *sk, u64 *sv) {
    for (u64 r = blockIdx.x * (u64)blockDim.x + threadIdx.x; r < R; r += (u64)gridDim.x * blockDim.x) {
        u64 g = last_le_hi(cgp, G, r);
        u64 pg = last_le_hi(pSum, PG, g);
        u64 a = HI(pSum[pg]);
        u64 at = (gc[pg] & OFF40) + slot[g] + (HI(cgp[g]) - HI(cgp[a])) - (g - a) + (r - HI(cgp[g]));
        sk[at] = chMax[r];
        sv[at] = chId[r];
    }
}

// bt_stage_keep: one thread per old entry e < nOld of the touched parents,
// flattened in group order (grid-stride; group pg's old entries start at
// its staged offset - replacements before it + changed children before
// it). An entry whose child is changed (its slot is among the group's
// changed children's slots, which increase) is skipped; the others go to
// the staged entries shifted by the replacements and changed children
// before them.
extern "C" __global__ void bt_stage_keep(u64 nOld, u64 PG, const u64 *pSum, const u64 *gc, const u32 *pNode,
                                         const u32 *slot, const u64 *cgp, u32 order, const u64 *keys,
                                         const u64 *slots, u64 *sk, u64 *sv) {
    for (u64 e = blockIdx.x * (u64)blockDim.x + threadIdx.x; e < nOld; e += (u64)gridDim.x * blockDim.x) {
        u64 lo = 0, hi = PG;
        while (hi - lo > 1) {
            u64 mid = (lo + hi) >> 1;
            u64 off = (gc[mid] & OFF40) - LO(pSum[mid]) + HI(pSum[mid]);
            if (off <= e) lo = mid; else hi = mid;
        }
        u64 pg = lo;
        u64 j = e - ((gc[pg] & OFF40) - LO(pSum[pg]) + HI(pSum[pg]));
        u64 a = HI(pSum[pg]), b = HI(pSum[pg + 1]);
        u64 x = a, y = b; // first changed child with slot >= j
        while (x < y) {
            u64 mid = (x + y) >> 1;
            if (slot[mid] < j) x = mid + 1; else y = mid;
        }
        if (x < b && slot[x] == j) continue;
        u64 k = x - a;
        u64 at = (gc[pg] & OFF40) + j + (HI(cgp[x]) - HI(cgp[a])) - k;
        u64 src = (u64)pNode[pg] * order + j;
        sk[at] = keys[src];
        sv[at] = slots[src];
    }
}

// bt_write_internal: one thread per staged entry e < total (grid-stride
// tiles, the group found by block_groups):
// as bt_write_leaves for internal nodes. The entry goes to its piece, its
// child gets the piece as parent; the slot-0 thread writes the piece's
// count, kind and parent (the old node's parent), the last-slot thread
// records the piece's id and max key.
extern "C" __global__ void bt_write_internal(u64 total, u64 G, const u64 *gc, const u64 *gp, const u32 *pNode,
                                             const u32 *up, const u64 *sk, const u64 *sv, u32 first,
                                             u32 order, u64 *keys, u64 *slots, u32 *count, u32 *parent,
                                             u8 *kind, u32 *chId, u64 *chMax) {
    __shared__ u64 bracket[2];
    TILE_LOOP(total) {
        u64 g = block_groups(GroupOff{gc, OFF40, nullptr, 0}, G, tile, total, bracket);
        u64 e = tile + threadIdx.x;
        if (e >= total) continue;
        u64 c = (gc[g + 1] & OFF40) - (gc[g] & OFF40);
        u64 p = HI(gp[g + 1]) - HI(gp[g]);
        u64 q, s, size;
        part_of(e - (gc[g] & OFF40), c, p, &q, &s, &size);
        u32 id = piece_id(pNode[g], first, LO(gp[g]), q);
        u64 at = (u64)id * order + s;
        keys[at] = sk[e];
        slots[at] = sv[e];
        parent[(u32)sv[e]] = id;
        if (s == 0) {
            put_head(count, kind, id, size, KIND_INTERNAL);
            parent[id] = up[g];
        }
        if (s + 1 == size) {
            chId[HI(gp[g]) + q] = id;
            chMax[HI(gp[g]) + q] = sk[e];
        }
    }
}

// bt_level_list: as bt_level for n children given by id and max key lists
// (the pieces of a split root), building the p nodes first..first+p-1.
extern "C" __global__ void bt_level_list(u64 n, u64 p, const u32 *ids, const u64 *maxes, u32 first, u32 order,
                                         u64 *keys, u64 *slots, u32 *count, u32 *parent, u8 *kind) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        Place e = place_of(i, n, p, first, order);
        keys[e.at] = maxes[i];
        slots[e.at] = ids[i];
        parent[ids[i]] = e.id;
        if (e.s == 0) {
            put_head(count, kind, e.id, e.size, KIND_INTERNAL);
            parent[e.id] = NIL;
        }
    }
}
