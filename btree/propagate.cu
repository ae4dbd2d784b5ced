// CUBPT: parent levels after a batch (propagate_gpu.go launches these):
// each touched node's parent, the parents' new sizes and their entries.
// Part of btree.cu's program; shared code in btree.cuh.
#include "btree/btree.cuh"

// bt_parent_of: one thread per g < bound (grid-stride), where bound (known
// to the host) is at least G = child[HDR_G], the level's touched nodes
// (its header). For g < G: par[g] = its parent; packed[g] = 1<<32 | its
// replacement count (from the scanned gp's high halves); slot[g] = its
// entry in the parent, found by its old max key (the parent's key for
// it). Every g in [G, bound) gets par NIL and packed 0: a last run of the
// reduction by parent that bt_parent_sizes and bt_level_totals leave out
// (real parents are never NIL and come first).
extern "C" __global__ void bt_parent_of(u64 bound, const u64 *child, const u32 *node, const u64 *oldMax,
                                        const u64 *gp, u32 order, const u64 *keys, const u32 *count,
                                        const u32 *parent, u32 *par, u64 *packed, u32 *slot) {
    const u64 G = child[HDR_G];
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < bound; g += (u64)gridDim.x * blockDim.x) {
        if (g >= G) {
            par[g] = NIL;
            packed[g] = 0;
            slot[g] = 0;
            continue;
        }
        u32 P = parent[node[g]];
        par[g] = P;
        packed[g] = (1ull << 32) | (u64)(HI(gp[g + 1]) - HI(gp[g]));
        slot[g] = lower_bound(keys + (u64)P * order, count[P], oldMax[g]);
    }
}

// bt_parent_sizes: one thread per g <= bound (grid-stride), where bound
// (known to the host) is at least G = *nG, the runs of the reduction by
// parent (the touched parents, and a last run of NIL when bt_parent_of
// ran past its level's count), so the host need not read G before the
// launch. For g < G with a parent (not NIL), pSum[g] (hi: changed
// children, lo: their replacements) is the reduction by parent of
// bt_parent_of's packed; the parent's new entries c = old - changed +
// replacements go to gc[g] (plus 1<<40 when c is 0: the parent is freed
// here, count 0 and kind free), its pieces and extra nodes to gp[g] as in
// bt_leaf_sizes, its old max key and its own parent to oldMax, up. Every
// other g <= bound zeroes pSum[g], gc[g], gp[g], so that exclusive scans
// over bound + 1 elements hold the totals at the parents' count and at
// bound.
extern "C" __global__ void bt_parent_sizes(u64 bound, const u32 *nG, const u32 *pNode, u64 *pSum, u32 order,
                                           u32 fill, const u64 *keys, u32 *count, const u32 *parent, u8 *kind,
                                           u64 *gc, u64 *gp, u64 *oldMax, u32 *up) {
    const u64 G = *nG;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g <= bound; g += (u64)gridDim.x * blockDim.x) {
        if (g >= G || pNode[g] == NIL) {
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

// bt_level_totals: one thread. After bt_parent_sizes and the scans over
// bound + 1 elements, fills the header hdr of the parents' level from the
// totals at bound and its children's header child: the parents' count
// (*nG less a last NIL run; more than bound, which bt_parent_sizes did
// not size, is an overflow), their pieces, staged entries, old entries
// (staged - child replacements + changed children) and their new nodes,
// taken from the control block's next node (ctl[CTL_NODES] advances by
// them, ctl[CTL_FREED] by the parents freed). A level that would pass the
// reserved node capacity or replacement buffers sets ctl[CTL_OVER] and
// gets an empty header, so that no kernel writes past them (the host
// reports the error).
extern "C" __global__ void bt_level_totals(u64 bound, const u32 *nG, const u32 *pNode, const u64 *gc,
                                           const u64 *gp, const u64 *child, u64 *hdr, u64 *ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    u64 PG = *nG;
    if (PG > 0 && pNode[PG - 1] == NIL) PG--;
    u64 entries = gc[bound] & OFF40, freed = gc[bound] >> FREED_SHIFT;
    u64 pieces = HI(gp[bound]), extra = LO(gp[bound]);
    u64 first = ctl[CTL_NODES];
    if (ctl[CTL_OVER] != 0 || PG > bound || first + extra > ctl[CTL_CAP] || pieces > ctl[CTL_RCAP]) {
        ctl[CTL_OVER] = 1;
        for (int w = 0; w < HDR_WORDS; w++) hdr[w] = 0;
        return;
    }
    ctl[CTL_NODES] = first + extra;
    ctl[CTL_FREED] += freed;
    hdr[HDR_G] = PG;
    hdr[HDR_R] = pieces;
    hdr[HDR_E] = entries;
    hdr[HDR_OLD] = entries - child[HDR_R] + child[HDR_G];
    hdr[HDR_FIRST] = first;
    hdr[HDR_EXTRA] = extra;
}

// bt_levels_init: one thread. Writes the leaf level's header hdr (G
// touched leaves, R pieces) and the control block ctl (nodes in use, node
// capacity, replacement buffers' size; nothing freed, no overflow) before
// the parent levels run.
extern "C" __global__ void bt_levels_init(u64 *hdr, u64 G, u64 R, u64 nodes, u64 cap, u64 rcap, u64 *ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int w = 0; w < HDR_WORDS; w++) hdr[w] = 0;
    hdr[HDR_G] = G;
    hdr[HDR_R] = R;
    for (int w = 0; w < CTL_WORDS; w++) ctl[w] = 0;
    ctl[CTL_NODES] = nodes;
    ctl[CTL_CAP] = cap;
    ctl[CTL_RCAP] = rcap;
}

// bt_zero_nodes: grid-stride over the words of the level's new nodes
// (hdr[HDR_EXTRA] nodes from hdr[HDR_FIRST]): zeroes their keys and slots
// (one thread per word) and count, parent, next, prev and kind (threads
// below the node count), as allocNodes' memsets do for a count the host
// knows.
extern "C" __global__ void bt_zero_nodes(const u64 *hdr, u32 order, u64 *keys, u64 *slots, u32 *count,
                                         u32 *parent, u32 *next, u32 *prv, u8 *kind) {
    const u64 first = hdr[HDR_FIRST], extra = hdr[HDR_EXTRA];
    const u64 words = extra * order, base = first * order;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < words; i += (u64)gridDim.x * blockDim.x) {
        keys[base + i] = 0;
        slots[base + i] = 0;
        if (i < extra) {
            count[first + i] = 0;
            parent[first + i] = 0;
            next[first + i] = 0;
            prv[first + i] = 0;
            kind[first + i] = 0;
        }
    }
}

// bt_stage_repl: one thread per replacement r < R = child[HDR_R] of the
// level below (grid-stride; G = child[HDR_G] its touched nodes, PG =
// hdr[HDR_G] the touched parents: both headers on the device): chId, chMax of child group g (largest g with hi(cgp[g])
// <= r) go to the staged entries of its parent group pg (largest pg with
// hi(pSum[pg]) <= g, pSum scanned) at the child's slot, shifted by the
// replacements and changed children before it in that parent.
extern "C" __global__ void bt_stage_repl(const u64 *child, const u64 *hdr, const u64 *cgp, const u32 *chId,
                                         const u64 *chMax, const u32 *slot, const u64 *pSum, const u64 *gc,
                                         u64 *sk, u64 *sv) {
    const u64 R = child[HDR_R], G = child[HDR_G], PG = hdr[HDR_G];
    if (PG == 0) return; // an overflowed level (bt_level_totals): nothing is written
    for (u64 r = blockIdx.x * (u64)blockDim.x + threadIdx.x; r < R; r += (u64)gridDim.x * blockDim.x) {
        u64 g = last_le_hi(cgp, G, r);
        u64 pg = last_le_hi(pSum, PG, g);
        u64 a = HI(pSum[pg]);
        u64 at = (gc[pg] & OFF40) + slot[g] + (HI(cgp[g]) - HI(cgp[a])) - (g - a) + (r - HI(cgp[g]));
        sk[at] = chMax[r];
        sv[at] = chId[r];
    }
}

// bt_stage_keep: one thread per old entry e < nOld = hdr[HDR_OLD] of the
// PG = hdr[HDR_G] touched parents, flattened in group order (grid-stride; group pg's old entries start at
// its staged offset - replacements before it + changed children before
// it). An entry whose child is changed (its slot is among the group's
// changed children's slots, which increase) is skipped; the others go to
// the staged entries shifted by the replacements and changed children
// before them.
extern "C" __global__ void bt_stage_keep(const u64 *hdr, const u64 *pSum, const u64 *gc, const u32 *pNode,
                                         const u32 *slot, const u64 *cgp, u32 order, const u64 *keys,
                                         const u64 *slots, u64 *sk, u64 *sv) {
    const u64 nOld = hdr[HDR_OLD], PG = hdr[HDR_G];
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

// bt_write_internal: one thread per staged entry e < total = hdr[HDR_E]
// of the G = hdr[HDR_G] touched parents, whose new nodes start at first =
// hdr[HDR_FIRST] (grid-stride tiles, the group found by block_groups):
// as bt_write_leaves for internal nodes. The entry goes to its piece, its
// child gets the piece as parent; the slot-0 thread writes the piece's
// count, kind and parent (the old node's parent), the last-slot thread
// records the piece's id and max key.
extern "C" __global__ void bt_write_internal(const u64 *hdr, const u64 *gc, const u64 *gp, const u32 *pNode,
                                             const u32 *up, const u64 *sk, const u64 *sv, u32 order, u64 *keys,
                                             u64 *slots, u32 *count, u32 *parent, u8 *kind, u32 *chId,
                                             u64 *chMax) {
    const u64 total = hdr[HDR_E], G = hdr[HDR_G];
    const u32 first = (u32)hdr[HDR_FIRST];
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
