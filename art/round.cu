// round.cu: Node rounds: an_* (round_gpu.go launches them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"

// ---------------------------------------------------------------------------
// Node rounds (round.go's nodeRound, phases U1-U5 of nodes.go). Entries
// sorted by (node, code): snode, scode, sop, slink, sgrp; touched node t
// owns entries [tstart[t], tstart[t+1]).

// an_keys: one thread per entry: its sort key (valid ones; the others keep
// theirs) and its index.
extern "C" __global__ void an_keys(u64 E, const u64 *enode, const u32 *ecode, u64 *ekey, u32 *eidx, int setkeys) {
    GRID_STRIDE(e, E) {
        if (setkeys) ekey[e] = entry_order(enode[e], ecode[e]);
        eidx[e] = (u32)e;
    }
}

// an_gather: one thread per sorted entry: the entry's fields in order.
extern "C" __global__ void an_gather(u64 E, const u32 *eidx, const u64 *enode, const u32 *ecode, const u32 *eop, const u64 *elink,
                                     const u32 *egrp, u64 *snode, u32 *scode, u32 *sop, u64 *slink, u32 *sgrp, u8 *tflag) {
    GRID_STRIDE(x, E) {
        u32 e = eidx[x];
        snode[x] = enode[e];
        scode[x] = ecode[e];
        sop[x] = eop[e];
        slink[x] = elink[e];
        sgrp[x] = egrp ? egrp[e] : 0;
        tflag[x] = x == 0 || enode[e] != enode[eidx[x - 1]];
    }
}

// find_touched: the touched index of node, or -1 (binary search over
// tnode, the touched nodes in entry order as an_final wrote them: one load
// a step, where snode[tstart[mid]] took two dependent ones).
__device__ long find_touched(const u64 *tnode, u64 T, u64 node) {
    u64 key = entry_order(node, 0);
    u64 lo = 0, hi = T;
    while (lo < hi) {
        u64 mid = (lo + hi) / 2;
        if (entry_order(tnode[mid], 0) < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < T && tnode[lo] == node ? (long)lo : -1;
}

// an_runs: one thread per moved entry of an insert's round (sorted by
// parent: nKeys and nGather), each parent's run written where an_write
// reads it. The thread of a run's first entry finds the parent's touched
// index p (find_touched; a parent not touched is an_moved_inplace's) and
// writes runs[p] = first << 32 | end, the run's entries [first, end).
// Invariant: runs is zero before (a touched node with no run reads [0,
// 0): no moves), each run has one first entry, so each runs[p] one
// writer. One binary search per parent with moves, where an_write
// searched the moves once per touched node.
extern "C" __global__ void an_runs(u64 M, const u64 *mnode, const u64 *tnode, u64 T, u64 *runs) {
    GRID_STRIDE(e, M) {
        u64 node = mnode[e];
        if (e > 0 && mnode[e - 1] == node) continue;
        long p = find_touched(tnode, T, node);
        if (p < 0) continue;
        u64 end = e + 1;
        while (end < M && mnode[end] == node) end++;
        runs[p] = e << 32 | end;
    }
}

// An N4's or N16's key bytes in two registers (merge_stage loads them,
// an_write gathers a new node's): byte j at bits 8j of kb0 for j < 8, at
// bits 8(j-8) of kb1 for j >= 8 (an N4's only in kb0). keyb_get reads
// byte j of them.
__device__ __forceinline__ u32 keyb_get(u64 kb0, u64 kb1, u32 j) {
    return (u32)((j < 8 ? kb0 >> (8 * j) : kb1 >> (8 * (j - 8))) & 0xff);
}

// keyb_put ors byte b in at place j of kb0 and kb1 (zero there before).
__device__ __forceinline__ void keyb_put(u64 *kb0, u64 *kb1, u32 j, u32 b) {
    if (j < 8) *kb0 |= (u64)b << (8 * j);
    else *kb1 |= (u64)b << (8 * (j - 8));
}

// Merge walks a node's children merged with its edits (nodes.go's merge):
// old children in byte order; edits from two code-sorted lists (the
// node's entries and the moved children's links), trims skipped, the
// terminator (code 0) handled apart.
struct Merge {
    const u64 *r;
    u32 k;
    int cur;   // next old position (N48, N256: next byte)
    int oldb;  // current old child's byte, 256 when none is left
    u64 oldl;
    // An N4's or N16's old children staged (merge_stage): their count,
    // key bytes (byte j at bits 8j of kb0, j >= 8 of kb1) and links
    // (child j at sc[j*stride], in shared memory); sc null when not.
    u32 cnt;
    u64 kb0, kb1;
    const u64 *sc;
    u32 stride;
    const u32 *ac, *aop;
    const u64 *al;
    u64 ai, ae;
    const u32 *bc, *bop;
    const u64 *bl;
    u64 bi, be;
};

__device__ void merge_next_old(Merge *m) {
    if (m->sc) {
        if ((u32)m->cur < m->cnt) {
            int j = m->cur++;
            m->oldb = (int)keyb_get(m->kb0, m->kb1, (u32)j);
            m->oldl = m->sc[j * m->stride];
            return;
        }
        m->oldb = 256;
        return;
    }
    const u8 *bs = rbytes(m->r);
    switch (m->k) {
    case K_N4:
    case K_N16: {
        u32 c = count_of(m->r);
        if ((u32)m->cur < c) {
            m->oldb = bs[(m->k == K_N4 ? N4_KEYB : N16_KEYB) + m->cur];
            m->oldl = m->r[(m->k == K_N4 ? N4_CHILD : N16_CHILD) + m->cur];
            m->cur++;
            return;
        }
        break;
    }
    case K_N48:
        while (m->cur < 256) {
            int b = m->cur++;
            u8 s = bs[N48_INDEXB + b];
            if (s) {
                m->oldb = b;
                m->oldl = m->r[N48_CHILD + s - 1];
                return;
            }
        }
        break;
    default:
        while (m->cur < 256) {
            int b = m->cur++;
            u64 l = m->r[N256_CHILD + b];
            if (l) {
                m->oldb = b;
                m->oldl = l;
                return;
            }
        }
    }
    m->oldb = 256;
}

// STAGE_MAX is the most old children merge_stage copies (an N16's), and
// STAGE_BLOCK the most threads of a block that stages them (art.cu's
// kernelBlock): the stage of a block is STAGE_MAX x STAGE_BLOCK links.
#define STAGE_MAX 16
#define STAGE_BLOCK 256

// merge_stage copies the old children of record r of kind k (N4 or N16)
// into m: their key bytes and count into registers, their links to sc
// (this thread's column of the block's stage, stride apart). The loads
// are independent, issued at once, where merge_next_old read one child
// after the other (each a dependent round trip to memory).
__device__ void merge_stage(Merge *m, const u64 *r, u32 k, u64 *sc, u32 stride) {
    u32 c = count_of(r);
    u32 cw = k == K_N4 ? N4_CHILD : N16_CHILD;
#pragma unroll
    for (u32 j = 0; j < STAGE_MAX; j++)
        if (j < c) sc[j * stride] = r[cw + j];
    if (k == K_N4) {
        m->kb0 = r[W_META] >> (8 * N4_KEYB);
        m->kb1 = 0;
    } else {
        m->kb0 = r[N16_KEYB / 8];
        m->kb1 = r[N16_KEYB / 8 + 1];
    }
    m->cnt = c;
    m->sc = sc;
    m->stride = stride;
}

// merge_init starts m over node record r of kind k with entries [ai, ae)
// and moved entries [bi, be) (codes sorted), and returns the merged
// terminator. With sc (not null) an N4's or N16's old children are
// staged there first (merge_stage; stride apart).
__device__ u64 merge_init(Merge *m, const u64 *r, u32 k, const u32 *ac, const u32 *aop, const u64 *al, u64 ai, u64 ae,
                          const u32 *bc, const u32 *bop, const u64 *bl, u64 bi, u64 be, u64 *sc, u32 stride) {
    m->r = r;
    m->k = k;
    m->cur = 0;
    m->ac = ac;
    m->aop = aop;
    m->al = al;
    m->ae = ae;
    m->bc = bc;
    m->bop = bop;
    m->bl = bl;
    m->bi = bi;
    m->be = be;
    m->sc = 0;
    if (sc && (k == K_N4 || k == K_N16)) merge_stage(m, r, k, sc, stride);
    u64 term = r[W_TERM];
    while (ai < ae && ac[ai] == 0) {
        term = aop[ai] == OP_DEL ? 0 : al[ai];
        ai++;
    }
    m->ai = ai;
    merge_next_old(m);
    return term;
}

// merge_next gives the next merged child (byte, link, source), false at
// the end.
__device__ bool merge_next(Merge *m, u32 *b, u64 *l, u32 *src) {
    for (;;) {
        while (m->ai < m->ae && m->ac[m->ai] == CODE_TRIM) m->ai++;
        int ec = 1000;
        bool fromB = false;
        if (m->ai < m->ae) ec = (int)m->ac[m->ai] - 1;
        if (m->bi < m->be && (int)m->bc[m->bi] - 1 < ec) {
            ec = (int)m->bc[m->bi] - 1;
            fromB = true;
        }
        if (m->oldb == 256 && ec == 1000) return false;
        if (ec <= m->oldb) {
            u32 op;
            u64 el;
            if (fromB) {
                op = m->bop[m->bi];
                el = m->bl[m->bi];
                m->bi++;
            } else {
                op = m->aop[m->ai];
                el = m->al[m->ai];
                m->ai++;
            }
            if (ec == m->oldb) merge_next_old(m);
            if (op == OP_DEL) continue;
            *b = (u32)ec;
            *l = el;
            *src = fromB ? SRC_MOVED : SRC_ENTRY;
            return true;
        }
        *b = (u32)m->oldb;
        *l = m->oldl;
        *src = SRC_OLD;
        merge_next_old(m);
        return true;
    }
}

// mark_inner writes word i of the pairs m12 (N4, N16) and m34 (N48,
// N256): one count of inner kind k (pair_mark) in k's pair when on, zero
// in the other and when not. an_plan marks the moves with it and
// an_free_marks the frees, for the scans rank_of reads.
__device__ __forceinline__ void mark_inner(bool on, u32 k, u64 *m12, u64 *m34, u64 i) {
    u64 v = on ? pair_mark(k) : 0;
    m12[i] = k <= K_N16 ? v : 0;
    m34[i] = k <= K_N16 ? 0 : v;
}

// an_plan: one thread per touched node (U1): its children after its
// entries, its outcome (stay, move, empty, collapse) and new kind, whether
// it has a trim, a collapsing node's remaining entry and byte; moves as
// pairs of 32-bit counters (kinds 1-2, 3-4) for the rank scans.
extern "C" __global__ void an_plan(const Tree *t, u64 T, const u32 *tstart, const u64 *snode, const u32 *scode, const u32 *sop,
                                   const u64 *slink, u8 *out, u32 *nkind, u8 *htrim, u64 *rem, u32 *remb, u64 *m12, u64 *m34,
                                   u32 *nidx) {
    GRID_STRIDE(ti, T + 1) {
        if (ti == T) {
            m12[ti] = 0;
            m34[ti] = 0;
            continue;
        }
        u32 a = tstart[ti], b = tstart[ti + 1];
        u64 node = snode[a];
        const u64 *r = rec(t, node);
        int c = (int)count_of(r);
        bool term = r[W_TERM] != 0;
        bool tr = false;
        for (u32 e = a; e < b; e++) {
            u32 code = scode[e], op = sop[e];
            if (op == OP_TRIM) tr = true;
            else if (code == 0 && op == OP_ADD) term = true;
            else if (code == 0 && op == OP_DEL) term = false;
            else if (op == OP_ADD) c++;
            else if (op == OP_DEL) c--;
        }
        int total = c + (term ? 1 : 0);
        u8 o = OUT_STAY;
        u32 nk = 0;
        rem[ti] = 0;
        remb[ti] = 0;
        if (total == 0) o = OUT_EMPTY;
        else if (total == 1) {
            o = OUT_COLLAPSE;
            Merge m;
            u64 tm = merge_init(&m, r, lkind(node), scode, sop, slink, a, b, 0, 0, 0, 0, 0, 0, 0);
            u32 cb, src;
            u64 cl;
            if (merge_next(&m, &cb, &cl, &src)) {
                rem[ti] = cl;
                remb[ti] = cb;
            } else {
                rem[ti] = tm;
                remb[ti] = 0;
            }
        } else {
            nk = kind_for((u32)c);
            if (nk != lkind(node)) o = OUT_MOVE;
        }
        out[ti] = o;
        nkind[ti] = nk;
        htrim[ti] = tr;
        nidx[ti] = (u32)lidx(node);
        mark_inner(o == OUT_MOVE, nk, m12, m34, ti);
    }
}

// an_final: one thread per touched node: its link after the round (the
// allocated record of a move), and the node itself in tnode (the touched
// nodes in entry order, for find_touched).
extern "C" __global__ void an_final(const Tree *t, u64 T, const u32 *tstart, const u64 *snode, const u8 *out, const u32 *nkind,
                                    const u64 *m12, const u64 *m34, u64 *final_, u64 *tnode) {
    GRID_STRIDE(ti, T) {
        u64 node = snode[tstart[ti]];
        tnode[ti] = node;
        if (out[ti] == OUT_MOVE) {
            u32 k = nkind[ti];
            final_[ti] = mklink(k, 0, alloc_idx(t, k, rank_of(k, ti, m12, m34, 0, 0)));
        } else {
            final_[ti] = node;
        }
    }
}

// an_emit: one thread per touched node that moves, empties or collapses
// (U2): the entry of its parent (from its trim, else its parent word): a
// root write, or an entry appended to out (the round's moved list in an
// insert, the next round's entries in a delete); counters count them.
extern "C" __global__ void an_emit(const Tree *t, u64 T, const u32 *tstart, const u64 *snode, const u32 *sgrp, const u8 *out,
                                   const u8 *htrim, const u64 *final_, const u64 *rem, const u64 *trimpar,
                                   u64 *rslot, u64 *rlink, unsigned long long *rcount,
                                   u64 *onode, u32 *ocode, u32 *oop, u64 *olink, unsigned long long *ocount) {
    GRID_STRIDE(ti, T) {
        u8 o = out[ti];
        if (o == OUT_STAY) continue;
        u32 a = tstart[ti], b = tstart[ti + 1];
        u64 node = snode[a];
        u64 pw = htrim[ti] ? trimpar[sgrp[b - 1]] : rec(t, node)[W_PARENT];
        u32 op = OP_SET;
        u64 l = final_[ti];
        if (o == OUT_EMPTY) {
            op = OP_DEL;
            l = 0;
        } else if (o == OUT_COLLAPSE) {
            l = rem[ti];
        }
        if (lkind(pw) == K_ROOT) {
            unsigned long long j = atomicAdd(rcount, 1ull);
            rslot[j] = lidx(pw);
            rlink[j] = l;
            continue;
        }
        unsigned long long j = atomicAdd(ocount, 1ull);
        onode[j] = node_id(pw);
        ocode[j] = laux(pw) + 1;
        oop[j] = op;
        olink[j] = l;
    }
}

// write_child places merged child i (byte b, link l) in a record of kind k.
__device__ __forceinline__ void write_child(u64 *d, u32 k, u32 i, u32 b, u64 l) {
    u8 *bs = (u8 *)d;
    switch (k) {
    case K_N4:
        bs[N4_KEYB + i] = (u8)b;
        d[N4_CHILD + i] = l;
        break;
    case K_N16:
        bs[N16_KEYB + i] = (u8)b;
        d[N16_CHILD + i] = l;
        break;
    case K_N48:
        bs[N48_INDEXB + b] = (u8)(i + 1);
        d[N48_CHILD + i] = l;
        break;
    default:
        d[N256_CHILD + b] = l;
    }
}

// write_touched is an_write's work for the touched nodes: an N4's and
// N16's old children staged in sc (this thread's column of the block's
// stage) and an N4 or N16 in place written straight from the merge; an
// N48 in place through a local copy of its children.
__device__ __forceinline__ void write_touched(const Tree *t, u64 T, int insert, const u32 *tstart, const u32 *scode,
                                              const u32 *sop, const u64 *slink, const u32 *sgrp, const u8 *out,
                                              const u8 *htrim, const u64 *final_, const u64 *rem, const u32 *remb,
                                              const u32 *mcode, const u32 *mop, const u64 *mlink, u64 M,
                                              const u32 *gtn, const u64 *gtref, const u32 *trimd, const u64 *trimpar,
                                              const u64 *tnode, const u64 *runs, u64 *sc) {
    GRID_STRIDE(ti, T) {
        u64 node = tnode[ti];
        u32 k = lkind(node);
        u8 o = out[ti];
        u32 a = tstart[ti], b = tstart[ti + 1];
        u64 *r = rec(t, node);
        if (o == OUT_EMPTY) continue;
        if (o == OUT_COLLAPSE) {
            u64 c = rem[ti];
            if (is_node(c)) {
                u64 *rc = rec(t, c);
                u32 plen = plen_of(r), cp = plen_of(rc);
                u32 np = plen + 1 + cp;
                u8 buf[PREFIX_STORED];
                const u8 *pb = rbytes(r + W_PREFIX);
                const u8 *cb = rbytes(rc + W_PREFIX);
                u32 got = 0;
                for (; got < plen && got < PREFIX_STORED; got++) buf[got] = pb[got];
                if (got < PREFIX_STORED) {
                    buf[got++] = (u8)remb[ti];
                    for (u32 j = 0; j < cp && got < PREFIX_STORED; j++) buf[got++] = cb[j];
                }
                u64 pv = 0;
                u32 keep = np < PREFIX_STORED ? np : PREFIX_STORED;
                for (u32 j = 0; j < keep; j++) pv |= (u64)buf[j] << (8 * j);
                rc[W_META] = (rc[W_META] & ~0xffffull) | np;
                rc[W_PREFIX] = pv;
                rc[W_PARENT] = r[W_PARENT];
            }
            continue;
        }
        u64 ma = 0, mb = 0;
        if (insert && M > 0) { // the node's moved entries (an_runs)
            u64 rr = runs[ti];
            ma = rr >> 32;
            mb = rr & 0xffffffffull;
        }
        // The header.
        u32 plen = plen_of(r);
        u64 prefix = r[W_PREFIX];
        u64 pw;
        if (htrim[ti]) {
            u32 g = sgrp[b - 1];
            plen = gtn[g] - trimd[g];
            prefix = pack_prefix(key_ptr(t, gtref[g]) + trimd[g], plen);
            pw = trimpar[g];
        } else {
            pw = r[W_PARENT];
            if (lkind(pw) != K_ROOT) {
                long p = find_touched(tnode, T, node_id(pw));
                if (p >= 0 && out[p] == OUT_MOVE) pw = parent_word(final_[p], laux(pw));
            }
        }
        u64 fl = final_[ti];
        u32 fk = lkind(fl);
        bool moved = o == OUT_MOVE;
        Merge m;
        u64 term = merge_init(&m, r, k, scode, sop, slink, a, b, mcode, mop, mlink, ma, mb, sc, blockDim.x);
        u32 cb, src;
        u64 cl;
        u32 n = 0;
        if (moved && (fk == K_N4 || fk == K_N16)) {
            // To an N4 or N16: each word of the new record stored once
            // (key bytes gathered in registers, the places past the count
            // zeroed), where the general path zeroes the record first,
            // stores each key byte and reads the meta word back.
            u64 *d = rec(t, fl);
            u32 dcw = fk == K_N4 ? N4_CHILD : N16_CHILD, dcap = fk == K_N4 ? 4 : 16;
            u64 k0 = 0, k1 = 0;
            while (merge_next(&m, &cb, &cl, &src)) {
                keyb_put(&k0, &k1, n, cb);
                d[dcw + n] = cl;
                n++;
                if (is_node(cl) && src != SRC_MOVED && !(src == SRC_OLD && find_touched(tnode, T, cl) >= 0))
                    rec(t, cl)[W_PARENT] = parent_word(fl, cb);
            }
            for (u32 j = n; j < dcap; j++) d[dcw + j] = 0;
            u64 nm = meta_word(plen, n);
            if (fk == K_N4) nm |= k0 << (8 * N4_KEYB);
            else {
                d[N16_KEYB / 8] = k0;
                d[N16_KEYB / 8 + 1] = k1;
            }
            d[W_META] = nm;
            d[W_PREFIX] = prefix;
            d[W_TERM] = term;
            d[W_PARENT] = pw;
            continue;
        }
        if (moved) {
            u64 *d = rec(t, fl);
            u32 kw = kwords(fk);
            for (u32 w = 0; w < kw; w++) d[w] = 0;
            d[W_PREFIX] = prefix;
            d[W_TERM] = term;
            d[W_PARENT] = pw;
            while (merge_next(&m, &cb, &cl, &src)) {
                write_child(d, fk, n, cb, cl);
                n++;
                if (is_node(cl) && src != SRC_MOVED && !(src == SRC_OLD && find_touched(tnode, T, cl) >= 0))
                    rec(t, cl)[W_PARENT] = parent_word(fl, cb);
            }
            d[W_META] = (d[W_META] & ~0xffffffffull) | meta_word(plen, n);
            continue;
        }
        if (k == K_N256) {
            // In place: the merged children differ from the old ones only at
            // the edited bytes.
            u64 *d = r;
            u32 c = 0;
            u32 bb = 0;
            u64 done[4] = {0, 0, 0, 0}; // bytes seen in the merge
            while (merge_next(&m, &cb, &cl, &src)) {
                d[N256_CHILD + cb] = cl;
                done[cb / 64] |= 1ull << (cb % 64);
                c++;
                if (is_node(cl) && src == SRC_ENTRY) rec(t, cl)[W_PARENT] = parent_word(fl, cb);
            }
            for (bb = 0; bb < 256; bb++)
                if (!(done[bb / 64] >> (bb % 64) & 1)) d[N256_CHILD + bb] = 0;
            d[W_META] = meta_word(plen, c);
            d[W_PREFIX] = prefix;
            d[W_TERM] = term;
            d[W_PARENT] = pw;
            continue;
        }
        if (k != K_N48) {
            // In place, an N4 or N16 staged: at most 16 children (the
            // kind did not change), written as the merge gives them, the
            // key bytes gathered in registers. Only the words that change
            // are stored (a store is an L2 write of its sector for each
            // thread of a warp): a child that differs from the staged old
            // one at its place, the old places past the new count (zero:
            // every place past a node's count is), the header and key
            // words when they differ.
            u32 cw = k == K_N4 ? N4_CHILD : N16_CHILD;
            u32 oc = m.cnt;
            u64 om = r[W_META], op = r[W_PREFIX], ot = r[W_TERM], opw = r[W_PARENT];
            u64 ok0 = m.kb0, ok1 = m.kb1;
            const u64 *os = m.sc;
            u32 st = m.stride;
            u64 k0 = 0, k1 = 0;
            while (merge_next(&m, &cb, &cl, &src)) {
                keyb_put(&k0, &k1, n, cb);
                if (n >= oc || os[n * st] != cl) r[cw + n] = cl;
                if (is_node(cl) && src == SRC_ENTRY) rec(t, cl)[W_PARENT] = parent_word(fl, cb);
                n++;
            }
            for (u32 j = n; j < m.cnt; j++) r[cw + j] = 0;
            u64 nm = meta_word(plen, n);
            if (k == K_N4) nm |= k0 << (8 * N4_KEYB);
            else {
                if (k0 != ok0) r[N16_KEYB / 8] = k0;
                if (k1 != ok1) r[N16_KEYB / 8 + 1] = k1;
            }
            if (nm != om) r[W_META] = nm;
            if (prefix != op) r[W_PREFIX] = prefix;
            if (term != ot) r[W_TERM] = term;
            if (pw != opw) r[W_PARENT] = pw;
            continue;
        }
        // In place, an N48: at most 48 children (the kind did not
        // change), copied locally first.
        u8 lb[48];
        u64 ll[48];
        u8 ls[48];
        while (merge_next(&m, &cb, &cl, &src)) {
            lb[n] = (u8)cb;
            ll[n] = cl;
            ls[n] = (u8)src;
            n++;
        }
        u32 kw = kwords(k);
        for (u32 w = 0; w < kw; w++) r[w] = 0;
        r[W_META] = meta_word(plen, n);
        r[W_PREFIX] = prefix;
        r[W_TERM] = term;
        r[W_PARENT] = pw;
        for (u32 i = 0; i < n; i++) {
            write_child(r, k, i, lb[i], ll[i]);
            if (is_node(ll[i]) && ls[i] == SRC_ENTRY) rec(t, ll[i])[W_PARENT] = parent_word(fl, lb[i]);
        }
    }
}

// an_write: one thread per touched node (U3):
// the merged node written at its place (the new record of a move; in
// place otherwise: N256 by direct edits, N4 and N16 straight from the
// merge, N48 through a local copy of at most 48 children), its parent
// word, and the parent words of its inner children that no other writer
// sets (writeNode and the loop after it in round.go). A collapsing node
// writes its remaining inner child's joined prefix and parent word. The
// old children of an N4 or N16 are staged first in shared memory (a
// column of STAGE_MAX links per thread, blocks of at most STAGE_BLOCK
// threads): their loads issued at once. Invariant: each touched node has
// one writer, and the records it reads are its own, its remaining child
// (a collapse) and the parent words an_final and an_plan wrote before.
extern "C" __global__ void __launch_bounds__(STAGE_BLOCK, 4) an_write(const Tree *t, u64 T, int insert, const u32 *tstart, const u32 *scode,
                                    const u32 *sop, const u64 *slink, const u32 *sgrp, const u8 *out,
                                    const u8 *htrim, const u64 *final_, const u64 *rem, const u32 *remb,
                                    const u32 *mcode, const u32 *mop, const u64 *mlink, u64 M,
                                    const u32 *gtn, const u64 *gtref, const u32 *trimd, const u64 *trimpar, const u64 *tnode,
                                    const u64 *runs) {
    __shared__ u64 stage[STAGE_MAX * STAGE_BLOCK];
    write_touched(t, T, insert, tstart, scode, sop, slink, sgrp, out, htrim, final_, rem, remb, mcode, mop, mlink, M, gtn,
                  gtref, trimd, trimpar, tnode, runs, stage + threadIdx.x);
}

// an_moved_inplace: one thread per moved entry whose target is not
// touched in the round (U4): the moved child's new link in place.
extern "C" __global__ void an_moved_inplace(const Tree *t, u64 M, const u64 *mnode, const u32 *mcode, const u64 *mlink,
                                            const u64 *tnode, u64 T) {
    GRID_STRIDE(e, M) {
        u64 p = mnode[e];
        if (find_touched(tnode, T, p) >= 0) continue;
        u64 *r = rec(t, p);
        u32 code = mcode[e];
        int w = code == 0 ? W_TERM : find_word(r, lkind(p), code - 1);
        if (w >= 0) r[w] = mlink[e];
    }
}

// an_root_writes: one thread per root write of a round.
extern "C" __global__ void an_root_writes(const Tree *t, u64 R, const u64 *rslot, const u64 *rlink) {
    GRID_STRIDE(j, R) t->root[rslot[j]] = rlink[j];
}

// an_push_frees: one thread per (node kind q, slot j < T), kinds N4 to
// N256 in order: an insert's frees pushed on the free stacks at the end of
// its node round, without the host reading their counts first. Slot j of
// kind q holds fsel[q*N + j], the j-th record of that kind the round
// freed (an_free_scatter, in node order), for j < fcnt[q]; it
// goes to freel[K_N4+q][top + j], where top is the stack's height after
// the round's allocations (the descriptor's). Invariant: no other pending
// frees of those kinds (the insert frees only here) and fcnt[q] <= the
// kind's live records, so top + j < hwm <= the stack's capacity; the host
// adds fcnt to its heights once the batch has synchronized.
extern "C" __global__ void an_push_frees(const Tree *t, u64 T, u64 N, const u32 *fsel, const u32 *fcnt) {
    GRID_STRIDE(i, 4 * T) {
        u64 q = i / T, j = i % T;
        if (j < fcnt[q]) {
            u32 k = K_N4 + (u32)q;
            t->freel[k][t->top[k] + j] = fsel[q * N + j];
        }
    }
}

// an_free_marks: one thread per touched node and one more (ti == T, zero):
// a freed node (one that does not stay) of kind k counted in its kind's
// 32-bit half of f12 (N4, N16) or f34 (N48, N256) (mark_inner, as
// an_plan counts the moves), for the exclusive scans that rank the frees
// of each kind in node order (an_free_scatter).
extern "C" __global__ void an_free_marks(u64 T, const u64 *tnode, const u8 *out, u64 *f12, u64 *f34) {
    GRID_STRIDE(ti, T + 1) {
        bool freed = ti < T && out[ti] != OUT_STAY;
        mark_inner(freed, freed ? lkind(tnode[ti]) : K_N4, f12, f34, ti);
    }
}

// an_free_scatter: one thread per touched node and one more (U5, the frees
// per kind in node order, from an_free_marks' scanned counts): a freed
// node of kind k writes its record index at its rank in part k-K_N4 of
// fsel (N apart); thread T writes the four counts to fcnt.
extern "C" __global__ void an_free_scatter(u64 T, u64 N, const u64 *tnode, const u8 *out, const u64 *f12, const u64 *f34,
                                           u32 *fsel, u32 *fcnt) {
    GRID_STRIDE(ti, T + 1) {
        if (ti == T) {
            for (u32 k = K_N4; k <= K_N256; k++) fcnt[k - K_N4] = (u32)rank_of(k, T, f12, f34, 0, 0);
            continue;
        }
        if (out[ti] == OUT_STAY) continue;
        u64 node = tnode[ti];
        u32 k = lkind(node);
        fsel[(k - K_N4) * N + rank_of(k, ti, f12, f34, 0, 0)] = (u32)lidx(node);
    }
}
