// iterate.cu: Ordered iteration: the cursor and the seeks the range kernels start from (query.cu uses them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"

// ---------------------------------------------------------------------------
// Ordered iteration and range queries (iter.go)

struct Cur {
    u64 node; // a node link, or ROOT_CUR
    u32 d;
    long pos;
};
#define ROOT_CUR ((u64)K_ROOT << KIND_SHIFT)

__device__ __forceinline__ long root_positions(const Tree *t) { return (long)(t->width + 1) * (long)t->tlen; }

// root_pos_link is store.rootPosLink.
__device__ u64 root_pos_link(const Tree *t, long rp) {
    long w = (long)t->width;
    long e = rp / (w + 1), j = rp % (w + 1);
    if (j == w) return t->root[e];
    if (e & ((1l << (8 * (w - j))) - 1)) return 0;
    return t->root[t->tlen + short_offset((u32)j) + (e >> (8 * (w - j)))];
}

// root_pos_of is store.rootPosOf.
__device__ long root_pos_of(const Tree *t, u64 i) {
    long w = (long)t->width;
    if (i < t->tlen) return (long)i * (w + 1) + w;
    long v = (long)(i - t->tlen);
    long l = 0;
    while (l + 1 < w && v >= (long)short_offset((u32)(l + 1))) l++;
    long e = (v - (long)short_offset((u32)l)) << (8 * (w - l));
    return e * (w + 1) + l;
}

// climb is store.climb.
__device__ void climb(const Tree *t, Cur *c, const u64 *r, int step) {
    u64 pw = r[W_PARENT];
    if (lkind(pw) == K_ROOT) {
        c->node = ROOT_CUR;
        c->d = 0;
        c->pos = root_pos_of(t, lidx(pw)) + step;
        return;
    }
    u64 p = node_id(pw);
    const u64 *pr = rec(t, p);
    bool ex;
    c->node = p;
    c->d = c->d - 1 - plen_of(pr);
    c->pos = lower_pos(pr, lkind(p), laux(pw), &ex) + step;
}

// cur_step is store.next (DESC false: the next leaf ascending, 0 at the
// end) and store.prev (DESC true: the next leaf descending, 0 at the
// start): one walk, the two differing only in the bound each loop checks,
// the step and where a new node's walk starts, written side by side as
// DESC ? descending : ascending.
template <bool DESC>
__device__ __forceinline__ u64 cur_step(const Tree *t, Cur *c) {
    for (;;) {
        if (c->node == ROOT_CUR) {
            long total = DESC ? 0 : root_positions(t);
            bool found = false;
            while (DESC ? c->pos >= 0 : c->pos < total) {
                u64 l = root_pos_link(t, c->pos);
                c->pos += DESC ? -1 : 1;
                if (!l) continue;
                if (is_leaf(l)) return l;
                c->node = l;
                c->d = (u32)t->width;
                c->pos = DESC ? (long)positions(rec(t, l), lkind(l)) - 1 : -1;
                found = true;
                break;
            }
            if (!found) return 0;
            continue;
        }
        const u64 *r = rec(t, c->node);
        u32 k = lkind(c->node);
        long P = DESC ? 0 : positions(r, k);
        bool down = false;
        while (DESC ? c->pos >= -1 : c->pos < P) {
            u64 l = child_at(r, k, (int)c->pos);
            c->pos += DESC ? -1 : 1;
            if (!l) continue;
            if (is_leaf(l)) return l;
            c->d = c->d + plen_of(r) + 1;
            c->node = l;
            c->pos = DESC ? (long)positions(rec(t, l), lkind(l)) - 1 : -1;
            down = true;
            break;
        }
        if (!down) climb(t, c, r, DESC ? -1 : 1);
    }
}

// cur_next is store.next: the next leaf ascending, 0 at the end.
__device__ u64 cur_next(const Tree *t, Cur *c) { return cur_step<false>(t, c); }

// cur_prev is store.prev: the next leaf descending, 0 at the start.
__device__ u64 cur_prev(const Tree *t, Cur *c) { return cur_step<true>(t, c); }

// prefix_compare is store.prefixCompare.
__device__ int prefix_compare(const Tree *t, u64 l, const u64 *r, const u8 *k, u32 n, u32 D) {
    u32 plen = plen_of(r);
    u32 m = prefix_mismatch(t, l, r, k, n, D);
    if (m == plen) return 0;
    if (D + m >= n) return -1;
    u8 pb = m < PREFIX_STORED ? rbytes(r + W_PREFIX)[m] : leaf_key(t, min_leaf(t, l))[D + m];
    return k[D + m] < pb ? -1 : 1;
}

__device__ __forceinline__ u64 be_uint(const u8 *b, u32 n) {
    u64 v = 0;
    for (u32 i = 0; i < n; i++) v = (v << 8) | b[i];
    return v;
}

// LowerPos is lower_pos as a function object, the node search of a
// descent by one thread (seek; walk.cu passes a tile's search instead).
struct LowerPos {
    __device__ __forceinline__ int operator()(const u64 *r, u32 k, u32 b, bool *exact) const { return lower_pos(r, k, b, exact); }
};

// seek is store.seekGE (LT false: the first position at or above bound b)
// and store.seekLT (LT true: the last position below b; has false: no
// bound, the last position): one descent, the two differing only in the
// position each outcome gives, written side by side as
// LT ? below-b : at-or-above-b. lp searches a node's key bytes (LowerPos,
// or a tile's search when a tile of lanes descends together, every lane
// with the same arguments).
template <bool LT, class LP = LowerPos>
__device__ __forceinline__ Cur seek(const Tree *t, const u8 *b, u32 n, bool has, LP lp = LP()) {
    long w = (long)t->width;
    Cur c;
    c.node = ROOT_CUR;
    c.d = 0;
    if (LT && !has) {
        c.pos = root_positions(t) - 1;
        return c;
    }
    if ((long)n < w) {
        long e = (long)be_uint(b, n) << (8 * (w - n));
        c.pos = LT ? e * (w + 1) + n - 1 : e * (w + 1) + n;
        return c;
    }
    long e = (long)be_uint(b, (u32)w);
    long rp = e * (w + 1) + w;
    u64 l = t->root[e];
    if (!l) {
        c.pos = LT ? rp - 1 : rp + 1;
        return c;
    }
    if (is_leaf(l)) {
        int cmp = compare_keys(leaf_key(t, l), laux(l), b, n);
        c.pos = LT ? (cmp < 0 ? rp : rp - 1) : (cmp >= 0 ? rp : rp + 1);
        return c;
    }
    u64 node = l;
    u32 D = (u32)w;
    for (;;) {
        const u64 *r = rec(t, node);
        u32 k = lkind(node);
        c.node = node;
        c.d = D;
        int pc = prefix_compare(t, node, r, b, n, D);
        if (pc < 0) {
            c.pos = LT ? -2 : -1;
            return c;
        }
        if (pc > 0) {
            c.pos = LT ? (long)positions(r, k) - 1 : positions(r, k);
            return c;
        }
        u32 d = D + plen_of(r);
        if (n == d) {
            c.pos = LT ? -2 : -1;
            return c;
        }
        bool exact;
        int p = lp(r, k, b[d], &exact);
        if (!exact) {
            c.pos = LT ? p - 1 : p;
            return c;
        }
        u64 ch = child_at(r, k, p);
        if (is_leaf(ch)) {
            int cmp = compare_keys(leaf_key(t, ch), laux(ch), b, n);
            c.pos = LT ? (cmp < 0 ? p : p - 1) : (cmp >= 0 ? p : p + 1);
            return c;
        }
        node = ch;
        D = d + 1;
    }
}

// seek_ge is store.seekGE.
__device__ Cur seek_ge(const Tree *t, const u8 *lo, u32 n) { return seek<false>(t, lo, n, true); }

// seek_lt is store.seekLT (has false: no bound).
__device__ Cur seek_lt(const Tree *t, const u8 *hi, u32 n, bool has) { return seek<true>(t, hi, n, has); }
