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

// cur_next is store.next: the next leaf ascending, 0 at the end.
__device__ u64 cur_next(const Tree *t, Cur *c) {
    for (;;) {
        if (c->node == ROOT_CUR) {
            long total = root_positions(t);
            bool found = false;
            while (c->pos < total) {
                u64 l = root_pos_link(t, c->pos);
                c->pos++;
                if (!l) continue;
                if (is_leaf(l)) return l;
                c->node = l;
                c->d = (u32)t->width;
                c->pos = -1;
                found = true;
                break;
            }
            if (!found) return 0;
            continue;
        }
        const u64 *r = rec(t, c->node);
        u32 k = lkind(c->node);
        long P = positions(r, k);
        bool down = false;
        while (c->pos < P) {
            u64 l = child_at(r, k, (int)c->pos);
            c->pos++;
            if (!l) continue;
            if (is_leaf(l)) return l;
            c->d = c->d + plen_of(r) + 1;
            c->node = l;
            c->pos = -1;
            down = true;
            break;
        }
        if (!down) climb(t, c, r, 1);
    }
}

// cur_prev is store.prev: the next leaf descending, 0 at the start. It is
// cur_next's mirror image (and seek_lt seek_ge's), kept written out: one
// walk parameterized by direction would hide which bound each step checks.
__device__ u64 cur_prev(const Tree *t, Cur *c) {
    for (;;) {
        if (c->node == ROOT_CUR) {
            bool found = false;
            while (c->pos >= 0) {
                u64 l = root_pos_link(t, c->pos);
                c->pos--;
                if (!l) continue;
                if (is_leaf(l)) return l;
                c->node = l;
                c->d = (u32)t->width;
                c->pos = (long)positions(rec(t, l), lkind(l)) - 1;
                found = true;
                break;
            }
            if (!found) return 0;
            continue;
        }
        const u64 *r = rec(t, c->node);
        u32 k = lkind(c->node);
        bool down = false;
        while (c->pos >= -1) {
            u64 l = child_at(r, k, (int)c->pos);
            c->pos--;
            if (!l) continue;
            if (is_leaf(l)) return l;
            c->d = c->d + plen_of(r) + 1;
            c->node = l;
            c->pos = (long)positions(rec(t, l), lkind(l)) - 1;
            down = true;
            break;
        }
        if (!down) climb(t, c, r, -1);
    }
}

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

// seek_ge is store.seekGE.
__device__ Cur seek_ge(const Tree *t, const u8 *lo, u32 n) {
    long w = (long)t->width;
    Cur c;
    c.node = ROOT_CUR;
    c.d = 0;
    if ((long)n < w) {
        long e = (long)be_uint(lo, n) << (8 * (w - n));
        c.pos = e * (w + 1) + n;
        return c;
    }
    long e = (long)be_uint(lo, (u32)w);
    long rp = e * (w + 1) + w;
    u64 l = t->root[e];
    if (!l) {
        c.pos = rp + 1;
        return c;
    }
    if (is_leaf(l)) {
        c.pos = compare_keys(leaf_key(t, l), laux(l), lo, n) >= 0 ? rp : rp + 1;
        return c;
    }
    u64 node = l;
    u32 D = (u32)w;
    for (;;) {
        const u64 *r = rec(t, node);
        u32 k = lkind(node);
        c.node = node;
        c.d = D;
        int pc = prefix_compare(t, node, r, lo, n, D);
        if (pc < 0) {
            c.pos = -1;
            return c;
        }
        if (pc > 0) {
            c.pos = positions(r, k);
            return c;
        }
        u32 d = D + plen_of(r);
        if (n == d) {
            c.pos = -1;
            return c;
        }
        bool exact;
        int p = lower_pos(r, k, lo[d], &exact);
        if (!exact) {
            c.pos = p;
            return c;
        }
        u64 ch = child_at(r, k, p);
        if (is_leaf(ch)) {
            c.pos = compare_keys(leaf_key(t, ch), laux(ch), lo, n) >= 0 ? p : p + 1;
            return c;
        }
        node = ch;
        D = d + 1;
    }
}

// seek_lt is store.seekLT (has false: no bound).
__device__ Cur seek_lt(const Tree *t, const u8 *hi, u32 n, bool has) {
    long w = (long)t->width;
    Cur c;
    c.node = ROOT_CUR;
    c.d = 0;
    if (!has) {
        c.pos = root_positions(t) - 1;
        return c;
    }
    if ((long)n < w) {
        long e = (long)be_uint(hi, n) << (8 * (w - n));
        c.pos = e * (w + 1) + n - 1;
        return c;
    }
    long e = (long)be_uint(hi, (u32)w);
    long rp = e * (w + 1) + w;
    u64 l = t->root[e];
    if (!l) {
        c.pos = rp - 1;
        return c;
    }
    if (is_leaf(l)) {
        c.pos = compare_keys(leaf_key(t, l), laux(l), hi, n) < 0 ? rp : rp - 1;
        return c;
    }
    u64 node = l;
    u32 D = (u32)w;
    for (;;) {
        const u64 *r = rec(t, node);
        u32 k = lkind(node);
        c.node = node;
        c.d = D;
        int pc = prefix_compare(t, node, r, hi, n, D);
        if (pc < 0) {
            c.pos = -2;
            return c;
        }
        if (pc > 0) {
            c.pos = (long)positions(r, k) - 1;
            return c;
        }
        u32 d = D + plen_of(r);
        if (n == d) {
            c.pos = -2;
            return c;
        }
        bool exact;
        int p = lower_pos(r, k, hi[d], &exact);
        if (!exact) {
            c.pos = p - 1;
            return c;
        }
        u64 ch = child_at(r, k, p);
        if (is_leaf(ch)) {
            c.pos = compare_keys(leaf_key(t, ch), laux(ch), hi, n) < 0 ? p : p - 1;
            return c;
        }
        node = ch;
        D = d + 1;
    }
}
