// delete.cu: Deleting keys: ad_* (delete_gpu.go launches them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"

// ---------------------------------------------------------------------------
// Delete (delete.go)

// ad_find: one thread per sorted distinct key: store.findHit (the leaf, the
// node holding it or a root parent word, the slot plus one, the node's
// depth, -1 for a leaf in the root array).
extern "C" __global__ void ad_find(const Tree *t, u64 n, const u32 *order, u8 *found, u64 *leaf, u64 *par, u32 *slot1, int *depth) {
    GRID_STRIDE(i, n) {
        auto [k, kn, l, p, D] = batch_walk(t, order[i]);
        int sl = 0, dep = -1;
        bool ok = false;
        while (l) {
            if (is_leaf(l)) {
                ok = laux(l) == kn && keys_equal(leaf_key(t, l), kn, k, kn);
                break;
            }
            const u64 *r = rec(t, l);
            u32 plen = plen_of(r);
            if (kn < D + plen) break;
            u32 st = plen < PREFIX_STORED ? plen : PREFIX_STORED;
            const u8 *pb = rbytes(r + W_PREFIX);
            bool same = true;
            for (u32 j = 0; j < st && same; j++) same = k[D + j] == pb[j];
            if (!same) break;
            u32 d = D + plen;
            p = node_id(l);
            dep++;
            if (kn == d) {
                l = r[W_TERM];
                sl = -1;
            } else {
                sl = k[d];
                l = find_child(r, lkind(l), (u32)sl);
            }
            D = d + 1;
        }
        found[i] = ok;
        leaf[i] = ok ? l : 0;
        par[i] = p;
        slot1[i] = (u32)(sl + 1);
        depth[i] = dep;
    }
}

// ad_mark: one thread per found key: an LV leaf is marked dead (its arena
// bytes added to dead); a leaf in the root array is unlinked; the depths'
// histogram and the deepest depth.
extern "C" __global__ void ad_mark(const Tree *t, u64 n, const u8 *found, const u64 *leaf, const u64 *par, const int *depth,
                                   unsigned long long *dead, u32 *hist, u32 *maxdepth) {
    GRID_STRIDE(i, n) {
        if (!found[i]) continue;
        u64 l = leaf[i];
        if (lkind(l) == K_LV) {
            rec(t, l)[1] = LV_DEAD;
            atomicAdd(dead, (unsigned long long)round_arena(laux(l)));
        }
        if (depth[i] < 0) {
            t->root[lidx(par[i])] = 0;
            continue;
        }
        atomicAdd(&hist[depth[i]], 1u);
        atomicMax(maxdepth, (u32)depth[i]);
    }
}

// ad_leaf_flags: one thread per sorted key: 1 when its leaf is found and of
// kind k (its index in idx), for the frees in key order.
extern "C" __global__ void ad_leaf_flags(u64 n, const u8 *found, const u64 *leaf, u32 k, u8 *flag, u32 *idx) {
    GRID_STRIDE(i, n) {
        u64 l = leaf[i];
        flag[i] = found[i] && lkind(l) == k;
        idx[i] = (u32)lidx(l);
    }
}

// ad_depthkeys: one thread per sorted key: the sort key putting the
// found keys below nodes deepest first (others last), and the position.
extern "C" __global__ void ad_depthkeys(u64 n, const u8 *found, const int *depth, u32 maxdepth, u64 *dk, u32 *dv) {
    GRID_STRIDE(i, n) {
        dk[i] = found[i] && depth[i] >= 0 ? (u64)(maxdepth - (u32)depth[i]) : ~0ull;
        dv[i] = (u32)i;
    }
}

// ad_entries: one thread per key of a depth (positions dv[off ..
// off+cnt)): its delete entry in the round's entries.
extern "C" __global__ void ad_entries(u64 cnt, u64 off, const u32 *dv, const u64 *par, const u32 *slot1,
                                      u64 *enode, u32 *ecode, u32 *eop, u64 *elink) {
    GRID_STRIDE(x, cnt) {
        u32 i = dv[off + x];
        enode[x] = par[i];
        ecode[x] = slot1[i];
        eop[x] = OP_DEL;
        elink[x] = 0;
    }
}
