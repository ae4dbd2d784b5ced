// build.cu: Building subtrees from sorted items: ab_*, a_totals (build_gpu.go launches them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"

// ---------------------------------------------------------------------------
// The build rounds (build.go's builder.run). Items: iref (key reference),
// ilen (key length), iold (the old element, 0 for a batch key), igrp
// (group). Segments: sstart, send (items), sd (base depth), sdst (where
// the link goes), spar (the root's parent word).

// put_link is builder.putLink.
__device__ __forceinline__ void put_link(const Tree *t, u64 dst, u64 l, u64 *glink) {
    u64 i = dst & ((1ull << DST_SHIFT) - 1);
    u32 c = (u32)(dst >> DST_SHIFT);
    if (c == DST_ROOT) t->root[i] = l;
    else if (c == DST_GROUP) glink[i] = l;
    else t->pool[c][i] = l;
}

// pack_prefix is packPrefix: up to PREFIX_STORED bytes, zero padded.
__device__ __forceinline__ u64 pack_prefix(const u8 *p, u32 n) {
    u64 v = 0;
    u32 m = n < PREFIX_STORED ? n : PREFIX_STORED;
    for (u32 i = 0; i < m; i++) v |= (u64)p[i] << (8 * i);
    return v;
}

__device__ __forceinline__ const u8 *item_key(const Tree *t, const u64 *iref, u64 i) { return key_ptr(t, iref[i]); }

// ab_batch_items: one thread per sorted distinct key i of a build: its
// item (buildStore).
extern "C" __global__ void ab_batch_items(const Tree *t, u64 n, const u32 *order, u64 *iref, u32 *ilen, u64 *iold, u32 *igrp) {
    GRID_STRIDE(i, n) {
        u32 p = order[i];
        iref[i] = mklink(K_BATCH, 0, p);
        ilen[i] = batch_len(t, p);
        iold[i] = 0;
        igrp[i] = 0;
    }
}

// ab_root_flags: one thread per sorted distinct batch item of a build:
// its root slot, and 1 when it starts a new slot (rootSegments).
extern "C" __global__ void ab_root_flags(const Tree *t, u64 n, const u64 *iref, const u32 *ilen, u64 *slot, u8 *flag) {
    GRID_STRIDE(i, n) {
        u64 s = root_slot(item_key(t, iref, i), ilen[i], (u32)t->width, t->tlen);
        slot[i] = s;
        bool f = i == 0;
        if (!f) f = s != root_slot(item_key(t, iref, i - 1), ilen[i - 1], (u32)t->width, t->tlen);
        flag[i] = f;
    }
}

// ab_root_segs: one thread per root segment s starting at item sel[s].
extern "C" __global__ void ab_root_segs(const Tree *t, u64 S, u64 n, const u32 *sel, const u64 *slot, const u32 *ilen,
                                        u32 *sstart, u32 *send, u32 *sd, u64 *sdst, u64 *spar) {
    GRID_STRIDE(s, S) {
        u32 a = sel[s];
        u32 e = s + 1 < S ? sel[s + 1] : (u32)n;
        u64 sl = slot[a];
        u32 w = (u32)t->width;
        sstart[s] = a;
        send[s] = e;
        sd[s] = ilen[a] < w ? ilen[a] : w;
        sdst[s] = ((u64)DST_ROOT << DST_SHIFT) | sl;
        spar[s] = root_parent(sl);
    }
}

// ab_seg_init: one thread per item: the segment holding it (the first
// round's segments tile the items).
extern "C" __global__ void ab_seg_init(u64 nIt, u64 S, const u32 *sstart, u32 *iseg) {
    GRID_STRIDE(i, nIt) iseg[i] = last_start_le(sstart, S, i);
}

// ab_plan: one thread per segment (step 1): a node segment's depth (the
// common prefix of its first and last items) and whether its first item is
// the terminator.
extern "C" __global__ void ab_plan(const Tree *t, u64 S, const u32 *sstart, const u32 *send, const u32 *sd,
                                   const u64 *iref, const u32 *ilen, u32 *depth, u32 *hterm) {
    GRID_STRIDE(s, S) {
        u32 a = sstart[s], e = send[s];
        depth[s] = 0;
        hterm[s] = 0;
        if (e - a == 1) continue;
        u32 d = lcp_from(item_key(t, iref, a), ilen[a], item_key(t, iref, e - 1), ilen[e - 1], sd[s]);
        depth[s] = d;
        hterm[s] = ilen[a] == d;
    }
}

// ab_pieces: one thread per item (step 2): 1 when the item starts a piece
// of its node segment. flag has nIt+1 elements; the last is 0.
extern "C" __global__ void ab_pieces(const Tree *t, u64 nIt, const u32 *iseg, const u32 *sstart, const u32 *send,
                                     const u32 *depth, const u32 *hterm, const u64 *iref, const u32 *ilen, u32 *flag) {
    GRID_STRIDE(i, nIt + 1) {
        u32 f = 0;
        u32 s = i < nIt ? iseg[i] : NO_SEG;
        if (s != NO_SEG && send[s] - sstart[s] > 1) {
            u32 a = sstart[s], d = depth[s];
            if (i == a || (i == a + 1 && hterm[s])) f = 1;
            else f = item_key(t, iref, i)[d] != item_key(t, iref, i - 1)[d];
        }
        flag[i] = f;
    }
}

// Allocation requests (and a node round's moves and frees) are counted
// per kind in pairs of 32-bit counters, kinds 1-2, 3-4, 5-6, 7-8 in one
// 64-bit word each (r12, r34, r56, r78), so that one exclusive scan of
// 64-bit words ranks two kinds at once. pair_mark is one count of kind k
// (1 to 8) in its pair's word: the low half for an odd kind, the high
// half for an even one.
__device__ __forceinline__ u64 pair_mark(u32 k) { return 1ull << (32 * ((k - 1) % 2)); }

// rank_of is an allocation's rank in its kind from the scanned pairs.
__device__ __forceinline__ u64 rank_of(u32 k, u64 s, const u64 *r12, const u64 *r34, const u64 *r56, const u64 *r78) {
    const u64 *p = k <= 2 ? r12 : k <= 4 ? r34 : k <= 6 ? r56 : r78;
    u64 v = p[s];
    return (k % 2) ? (v & 0xffffffffull) : (v >> 32);
}

// ab_count: one thread per segment (step 3): a node segment's children and
// kind, or a new leaf's class (kind 0: an old item, nothing allocated);
// the allocation requests as pairs of 32-bit counters (kinds 1-2, 3-4, 5-6,
// 7-8) and arena bytes, for the exclusive scans of step 4. *more (zeroed
// before) becomes 1 when a node segment has a piece of several items: the
// next round has a node segment, else every next segment is one leaf and
// that round skips its passes over the items.
extern "C" __global__ void ab_count(u64 S, const u32 *sstart, const u32 *send, const u32 *hterm, const u32 *flag, const u32 *pex,
                                    const u64 *iold, const u32 *ilen, u32 *children, u32 *kind,
                                    u64 *r12, u64 *r34, u64 *r56, u64 *r78, u64 *abytes, u64 *more) {
    GRID_STRIDE(s, S + 1) {
        u64 req[4] = {0, 0, 0, 0};
        u64 ab = 0;
        if (s < S) {
            u32 a = sstart[s], e = send[s];
            u32 k = 0;
            children[s] = 0;
            if (e - a > 1) {
                u32 first = pex[a];                      // flag[a] == 1
                u32 last = pex[e - 1] + flag[e - 1] - 1; // the piece of the last item
                u32 c = last - first + 1 - hterm[s];
                children[s] = c;
                if (last - first + 1 != e - a && *(volatile u64 *)more == 0) *more = 1;
                k = kind_for(c);
            } else if (iold[a] == 0) {
                k = leaf_kind(ilen[a]);
                if (k == K_LV) ab = round_arena(ilen[a]);
            }
            kind[s] = k;
            if (k) req[(k - 1) / 2] = pair_mark(k);
        }
        r12[s] = req[0];
        r34[s] = req[1];
        r56[s] = req[2];
        r78[s] = req[3];
        abytes[s] = ab;
    }
}

// a_totals2: one thread: out[2i], out[2i+1] = the low and high halves of
// pairs[i][n], out[8] = bytes[n], out[9] = extra[m] (totals after scans).
extern "C" __global__ void a_totals(u64 n, const u64 *p0, const u64 *p1, const u64 *p2, const u64 *p3, const u64 *bytes,
                                    u64 m, const u32 *extra, u64 *out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const u64 *p[4] = {p0, p1, p2, p3};
    for (int i = 0; i < 4; i++) {
        u64 v = p[i] ? p[i][n] : 0;
        out[2 * i] = v & 0xffffffffull;
        out[2 * i + 1] = v >> 32;
    }
    out[8] = bytes ? bytes[n] : 0;
    out[9] = extra ? extra[m] : 0;
}

// ab_write: one thread per segment (step 5): a node's header (the rest of
// the record zero) or a new leaf, and its link at the segment's
// destination; an old node records its trim (new base depth, parent).
extern "C" __global__ void ab_write(const Tree *t, u64 S, const u32 *sstart, const u32 *sd, const u64 *sdst, const u64 *spar,
                                    const u32 *depth, const u32 *children, const u32 *kind,
                                    const u64 *r12, const u64 *r34, const u64 *r56, const u64 *r78, const u64 *abytes,
                                    const u64 *iref, const u32 *ilen, const u64 *iold, const u32 *igrp,
                                    u64 *seglink, u64 *glink, u32 *trimd, u64 *trimpar) {
    GRID_STRIDE(s, S) {
        u32 a = sstart[s];
        u32 k = kind[s];
        u64 l;
        if (k >= K_N4 && k <= K_N256) {
            l = mklink(k, 0, alloc_idx(t, k, rank_of(k, s, r12, r34, r56, r78)));
            u64 *r = rec(t, l);
            u32 kw = kwords(k);
            u32 d = depth[s], D = sd[s];
            u64 meta = meta_word(d - D, children[s]), prefix = pack_prefix(item_key(t, iref, a) + D, d - D), par = spar[s];
            for (u32 w = 0; w < kw; w++) r[w] = w == W_META ? meta : w == W_PREFIX ? prefix : w == W_PARENT ? par : 0;
        } else if (k == 0) {
            l = iold[a];
            if (is_node(l)) {
                trimd[igrp[a]] = sd[s];
                trimpar[igrp[a]] = spar[s];
            }
        } else {
            u32 n = ilen[a];
            l = mklink(k, n, alloc_idx(t, k, rank_of(k, s, r12, r34, r56, r78)));
            const u8 *key = item_key(t, iref, a);
            u64 v = t->bvals[lidx(iref[a])];
            u64 *r = rec(t, l);
            if (k == K_LV) {
                u64 off = t->arena_base + abytes[s];
                u8 *dst = t->arena + off;
                u64 rn = round_arena(n);
                for (u64 b = 0; b < rn; b++) dst[b] = b < n ? key[b] : 0;
                r[0] = v;
                r[1] = off | ((u64)n << AUX_SHIFT);
            } else {
                // Whole words: the key's bytes zero padded, the value,
                // zeros after it (a byte store per key byte cost a
                // store instruction and an L2 write per byte).
                u32 kw = kwords(k), vw = value_word(k);
                for (u32 w = 0; w < kw; w++) r[w] = w == vw ? v : 8 * w < n && w < vw ? pack_prefix(key + 8 * w, n - 8 * w) : 0;
            }
        }
        seglink[s] = l;
        put_link(t, sdst[s], l, glink);
    }
}

// ab_place: one thread per item that starts a piece (step 6): the piece's
// key byte (N4, N16) or index entry (N48) in its node, and the next
// round's segment (start, base depth, destination word, parent word).
extern "C" __global__ void ab_place(const Tree *t, u64 nIt, const u32 *flag, const u32 *pex, const u32 *iseg, const u32 *sstart,
                                    const u32 *depth, const u32 *hterm, const u64 *seglink, const u64 *iref,
                                    u32 *nstart, u32 *nseg, u32 *nd, u64 *ndst, u64 *npar) {
    GRID_STRIDE(i, nIt) {
        if (!flag[i]) continue;
        u32 s = iseg[i];
        u32 a = sstart[s];
        u64 nl = seglink[s];
        u32 k = lkind(nl);
        u64 *r = rec(t, nl);
        u64 base = lidx(nl) * kwords(k);
        u32 d = depth[s];
        u32 p = pex[i];
        nstart[p] = (u32)i;
        nseg[p] = s;
        if (hterm[s] && i == a) {
            nd[p] = d;
            ndst[p] = ((u64)k << DST_SHIFT) | (base + W_TERM);
            npar[p] = 0;
            continue;
        }
        u32 cr = p - pex[a] - hterm[s];
        u32 c = item_key(t, iref, i)[d];
        u8 *bs = (u8 *)r;
        u32 w;
        switch (k) {
        case K_N4:
            bs[N4_KEYB + cr] = (u8)c;
            w = N4_CHILD + cr;
            break;
        case K_N16:
            bs[N16_KEYB + cr] = (u8)c;
            w = N16_CHILD + cr;
            break;
        case K_N48:
            bs[N48_INDEXB + c] = (u8)(cr + 1);
            w = N48_CHILD + cr;
            break;
        default:
            w = N256_CHILD + c;
        }
        nd[p] = d + 1;
        ndst[p] = ((u64)k << DST_SHIFT) | (base + w);
        npar[p] = parent_word(nl, c);
    }
}

// ab_close: one thread per next segment (step 7): its end.
extern "C" __global__ void ab_close(u64 P, const u32 *nstart, const u32 *nseg, const u32 *send, u32 *nend) {
    GRID_STRIDE(p, P) nend[p] = (p + 1 < P && nseg[p + 1] == nseg[p]) ? nstart[p + 1] : send[nseg[p]];
}

// ab_itemseg: one thread per item: its segment in the next round (its
// piece), or none once it became a leaf.
extern "C" __global__ void ab_itemseg(u64 nIt, const u32 *flag, const u32 *pex, const u32 *sstart, const u32 *send, u32 *iseg) {
    GRID_STRIDE(i, nIt) {
        u32 s = iseg[i];
        if (s == NO_SEG) continue;
        iseg[i] = send[s] - sstart[s] == 1 ? NO_SEG : pex[i] + flag[i] - 1;
    }
}
