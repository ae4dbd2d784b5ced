// insert.cu: Inserting new keys: ai_* (insert_gpu.go launches them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"

// ---------------------------------------------------------------------------
// Insert (insert.go): classify, group by edge, items, entries.

// ai_classify: one thread per sorted distinct key i: store.classify. The
// slot is stored plus one (0 the terminator; root edges 1, as slot 0).
extern "C" __global__ void ai_classify(const Tree *t, u64 n, const u32 *order, u8 *cls, u64 *par, u32 *slot1, u64 *tgt,
                                       u32 *gd, u8 *fresh) {
    GRID_STRIDE(i, n) {
        const BatchWalk s = batch_walk(t, order[i]);
        const u8 *k = s.k;
        u32 kn = s.kn;
        u64 l = s.l, p = s.p;
        int sl = 0;
        u32 D = s.D;
        u8 c = 0;
        u64 tg = 0;
        u32 dd = D;
        if (l == 0) {
            c = CLS_ROOT;
        } else {
            for (;;) {
                if (is_leaf(l)) {
                    if (laux(l) == kn && keys_equal(leaf_key(t, l), kn, k, kn)) {
                        c = CLS_UPD;
                    } else {
                        c = CLS_SPLIT;
                        dd = D;
                    }
                    tg = l;
                    break;
                }
                const u64 *r = rec(t, l);
                u32 plen = plen_of(r);
                if (prefix_mismatch(t, l, r, k, kn, D) < plen) {
                    c = CLS_SPLIT;
                    tg = l;
                    dd = D;
                    break;
                }
                u32 d = D + plen;
                u64 ch = r[W_TERM];
                int nsl = -1;
                if (kn > d) {
                    nsl = k[d];
                    ch = find_child(r, lkind(l), (u32)nsl);
                }
                if (ch == 0) {
                    c = CLS_ADD;
                    p = node_id(l);
                    sl = nsl;
                    dd = d + 1;
                    break;
                }
                p = node_id(l);
                sl = nsl;
                l = ch;
                D = d + 1;
            }
        }
        cls[i] = c;
        par[i] = p;
        slot1[i] = (u32)(sl + 1);
        tgt[i] = tg;
        gd[i] = dd;
        fresh[i] = c != CLS_UPD;
    }
}

// ai_edgekeys: one thread per new key x: the sort key of its edge
// (insert.go's edgeOrder) and its sorted position as the payload.
extern "C" __global__ void ai_edgekeys(u64 F, const u32 *fpos, const u64 *par, const u32 *slot1, u64 *ek, u32 *ev) {
    GRID_STRIDE(x, F) {
        u32 i = fpos[x];
        ek[x] = entry_order(par[i], slot1[i]);
        ev[x] = i;
    }
}

// ai_gflags: one thread per new key in edge order: 1 when it starts a
// group (another edge than the key before).
extern "C" __global__ void ai_gflags(u64 F, const u64 *ek, u8 *flag) {
    GRID_STRIDE(x, F) flag[x] = x == 0 || ek[x] != ek[x - 1];
}

// ai_groups: one thread per group g (keys fs[gstart[g] .. gstart[g+1])):
// for a split, the old element's key reference and path length, and its
// rank among the group's keys (a binary search); issplit[g] for the scan
// that places the items (issplit[G] = 0).
extern "C" __global__ void ai_groups(const Tree *t, u64 G, u64 F, const u32 *gstart, const u32 *fs, const u32 *order,
                                     const u8 *cls, const u64 *tgt, const u32 *gd, u64 *tref, u32 *tn, u32 *trank, u32 *issplit) {
    GRID_STRIDE(g, G + 1) {
        if (g == G) {
            issplit[g] = 0;
            continue;
        }
        u32 a = gstart[g];
        u32 b = g + 1 < G ? gstart[g + 1] : (u32)F;
        u32 i0 = fs[a];
        issplit[g] = cls[i0] == CLS_SPLIT;
        tref[g] = 0;
        tn[g] = 0;
        trank[g] = 0;
        if (cls[i0] != CLS_SPLIT) continue;
        u64 T = tgt[i0];
        u64 ref;
        u32 n;
        if (is_leaf(T)) {
            ref = T;
            n = laux(T);
        } else {
            ref = min_leaf(t, T);
            n = gd[i0] + plen_of(rec(t, T));
        }
        const u8 *path = leaf_key(t, ref);
        u32 lo = 0, hi = b - a;
        while (lo < hi) {
            u32 mid = (lo + hi) / 2;
            u32 bp = order[fs[a + mid]];
            if (compare_keys(t->bdata + t->boffs[bp], batch_len(t, bp), path, n) >= 0) hi = mid;
            else lo = mid + 1;
        }
        tref[g] = ref;
        tn[g] = n;
        trank[g] = lo;
    }
}

// ai_items: one thread per new key x (edge order): its item, after its
// group's old element when that ranks before it.
extern "C" __global__ void ai_items(const Tree *t, u64 F, u64 G, const u32 *gstart, const u32 *sb, const u32 *issplit,
                                    const u32 *trank, const u32 *fs, const u32 *order,
                                    u64 *iref, u32 *ilen, u64 *iold, u32 *igrp) {
    GRID_STRIDE(x, F) {
        u32 g = last_start_le(gstart, G, x);
        u32 a = gstart[g];
        u32 j = (u32)x - a;
        u32 it = a + sb[g] + j + (issplit[g] && j >= trank[g] ? 1 : 0);
        u32 bp = order[fs[x]];
        iref[it] = mklink(K_BATCH, 0, bp);
        ilen[it] = batch_len(t, bp);
        iold[it] = 0;
        igrp[it] = g;
    }
}

// ai_segs: one thread per group: its old element's item (a split), and its
// segment: its items, base depth, destination (its group link), and the
// parent word of the subtree's root.
extern "C" __global__ void ai_segs(u64 G, u64 F, const u32 *gstart, const u32 *sb, const u32 *issplit, const u32 *trank,
                                   const u64 *tref, const u32 *tn, const u32 *fs, const u64 *par, const u32 *slot1,
                                   const u64 *tgt, const u32 *gd, u64 *iref, u32 *ilen, u64 *iold, u32 *igrp,
                                   u32 *sstart, u32 *send, u32 *sd, u64 *sdst, u64 *spar) {
    GRID_STRIDE(g, G) {
        u32 a = gstart[g];
        u32 b = g + 1 < G ? gstart[g + 1] : (u32)F;
        u32 i0 = fs[a];
        u32 item = a + sb[g];
        if (issplit[g]) {
            u32 it = item + trank[g];
            iref[it] = tref[g];
            ilen[it] = tn[g];
            iold[it] = tgt[i0];
            igrp[it] = (u32)g;
        }
        sstart[g] = item;
        send[g] = item + (b - a) + issplit[g];
        sd[g] = gd[i0];
        sdst[g] = ((u64)DST_GROUP << DST_SHIFT) | g;
        u64 p = par[i0];
        spar[g] = lkind(p) == K_ROOT ? p : slot1[i0] > 0 ? parent_word(p, slot1[i0] - 1) : 0;
    }
}

// ENTRY_NONE is the sort key of an invalid entry: entry_order of kind 15
// (K_ROOT, never an entry's node), above every valid key and below 2^53
// (round_gpu.go's entryBits, the bits the node round sorts).
#define ENTRY_NONE ((u64)15 << 49)

// ai_entries: one thread per group: its node entry (an add at an empty
// slot, or the set of a split slot) at g and its old node's trim at G+g;
// invalid entries (root edges, no trim) get the sort key ENTRY_NONE, above
// every valid entry_order, and eflag 0 (1 for the valid ones: the node
// round sorts only those). The node entries are in ascending key order
// already (the groups are in edge order, and a group's entry key is its
// edge's), and all valid keys differ, so the node round sorts only the
// trims and merges them in (roundIn.ascending). valid[0] counts the valid
// entries, valid[1] the valid node entries: each thread sums its groups',
// each warp adds its lanes' sums once after the loop (every lane of every
// warp reaches it: whole blocks, no early exit), not one atomic per group
// on one counter (10M of them at 100M keys).
extern "C" __global__ void ai_entries(u64 G, const u32 *gstart, const u32 *fs, const u8 *cls, const u64 *par, const u32 *slot1,
                                      const u64 *tgt, const u64 *glink, u64 *ekey, u64 *enode, u32 *ecode, u32 *eop,
                                      u64 *elink, u32 *egrp, u8 *eflag, unsigned long long *valid) {
    u64 mine = 0, mine0 = 0;
    GRID_STRIDE(g, G) {
        u32 i0 = fs[gstart[g]];
        u64 p = par[i0];
        u64 e0 = g, e1 = G + g;
        ekey[e0] = ENTRY_NONE;
        ekey[e1] = ENTRY_NONE;
        eflag[e0] = 0;
        eflag[e1] = 0;
        u32 n = 0;
        if (lkind(p) != K_ROOT) {
            enode[e0] = p;
            ecode[e0] = slot1[i0];
            eop[e0] = cls[i0] == CLS_ADD ? OP_ADD : OP_SET;
            elink[e0] = glink[g];
            egrp[e0] = (u32)g;
            ekey[e0] = entry_order(p, slot1[i0]);
            eflag[e0] = 1;
            n++;
            mine0++;
        }
        if (cls[i0] == CLS_SPLIT && is_node(tgt[i0])) {
            u64 T = node_id(tgt[i0]);
            enode[e1] = T;
            ecode[e1] = CODE_TRIM;
            eop[e1] = OP_TRIM;
            elink[e1] = 0;
            egrp[e1] = (u32)g;
            ekey[e1] = entry_order(T, CODE_TRIM);
            eflag[e1] = 1;
            n++;
        }
        mine += n;
    }
    for (int d = WARP / 2; d > 0; d >>= 1) {
        mine += __shfl_xor_sync(FULL_MASK, mine, d);
        mine0 += __shfl_xor_sync(FULL_MASK, mine0, d);
    }
    if ((threadIdx.x & (WARP - 1)) == 0 && mine) atomicAdd(valid, (unsigned long long)mine);
    if ((threadIdx.x & (WARP - 1)) == 0 && mine0) atomicAdd(valid + 1, (unsigned long long)mine0);
}

// ai_root_writes: one thread per group: a group at a root edge writes its
// link into the root slot (after the node round).
extern "C" __global__ void ai_root_writes(const Tree *t, u64 G, const u32 *gstart, const u32 *fs, const u64 *par, const u64 *glink) {
    GRID_STRIDE(g, G) {
        u64 p = par[fs[gstart[g]]];
        if (lkind(p) == K_ROOT) t->root[lidx(p)] = glink[g];
    }
}

// ai_values: one thread per sorted distinct key: a present key's value.
extern "C" __global__ void ai_values(const Tree *t, u64 n, const u32 *order, const u8 *cls, const u64 *tgt) {
    GRID_STRIDE(i, n) {
        if (cls[i] != CLS_UPD) continue;
        u64 l = tgt[i];
        rec(t, l)[value_word(lkind(l))] = t->bvals[order[i]];
    }
}
