// art.cuh: the device types and helpers every part of art.cu shares: the
// descriptor Tree, links, records, keys and the descents (layout.go,
// store.go on the CPU).
#pragma once
#include "warpkv/types.cuh"

#define GRID_STRIDE(i, n) for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (u64)(n); i += (u64)gridDim.x * blockDim.x)

// Tree is the descriptor the host writes before each step (engine_gpu.go's
// treeDesc, word for word).
struct Tree {
    u64 *pool[9];   // record buffers by kind
    u32 *freel[9];  // free stacks by kind (top at the end)
    u32 *pend[9];   // records freed by the batch in progress
    u64 hwm[9];     // records in use or free, at the step's start
    u64 top[9];     // free stack heights, at the step's start
    u8 *arena;      // long keys
    u64 *root;      // root array
    u64 width;      // W
    u64 tlen;       // 256^W
    const u8 *bdata;   // the batch's keys
    const u32 *boffs;  // key i: bdata[boffs[i] .. boffs[i+1])
    const u64 *bvals;  // values by batch position
    u64 arena_base;    // the step's first arena byte
};
static_assert(sizeof(Tree) == DESC_WORDS * 8, "Tree differs from engine_gpu.go's treeDesc");

// ---------------------------------------------------------------------------
// Links, records, keys (layout.go, store.go)

__device__ __forceinline__ u32 lkind(u64 l) { return (u32)(l >> KIND_SHIFT); }
__device__ __forceinline__ u32 laux(u64 l) { return (u32)((l >> AUX_SHIFT) & AUX_MASK); }
__device__ __forceinline__ u64 lidx(u64 l) { return l & INDEX_MASK; }
__device__ __forceinline__ u64 mklink(u32 k, u32 a, u64 i) { return ((u64)k << KIND_SHIFT) | ((u64)a << AUX_SHIFT) | i; }
__device__ __forceinline__ bool is_leaf(u64 l) { u32 k = lkind(l); return k >= K_L8 && k <= K_LV; }
__device__ __forceinline__ bool is_node(u64 l) { u32 k = lkind(l); return k >= K_N4 && k <= K_N256; }
__device__ __forceinline__ u64 node_id(u64 l) { return l & ~((u64)AUX_MASK << AUX_SHIFT); }
__device__ __forceinline__ u64 parent_word(u64 p, u32 b) { return node_id(p) | ((u64)b << AUX_SHIFT); }
__device__ __forceinline__ u64 root_parent(u64 s) { return mklink(K_ROOT, 0, s); }

__device__ __forceinline__ u32 kwords(u32 k) {
    switch (k) {
    case K_N4: return W_N4;
    case K_N16: return W_N16;
    case K_N48: return W_N48;
    case K_N256: return W_N256;
    case K_L8: return W_L8;
    case K_L16: return W_L16;
    case K_L32: return W_L32;
    default: return W_LV;
    }
}
__device__ __forceinline__ u64 *rec(const Tree *t, u64 l) { u32 k = lkind(l); return t->pool[k] + lidx(l) * kwords(k); }
__device__ __forceinline__ u32 leaf_kind(u32 n) { return n <= 8 ? K_L8 : n <= 16 ? K_L16 : n <= 32 ? K_L32 : K_LV; }
__device__ __forceinline__ u32 kind_for(u32 c) { return c <= 4 ? K_N4 : c <= 16 ? K_N16 : c <= 48 ? K_N48 : K_N256; }
__device__ __forceinline__ u32 value_word(u32 k) { return k == K_L8 ? 1 : k == K_L16 ? 2 : k == K_L32 ? 4 : 0; }
__device__ __forceinline__ u64 round_arena(u64 n) { return (n + ARENA_GRANULE - 1) & ~(u64)(ARENA_GRANULE - 1); }
__device__ __forceinline__ u64 short_offset(u32 l) { return ((1ull << (8 * l)) - 1) / 255; }

// alloc_idx is store.alloc's index of allocation r of kind k in this step.
__device__ __forceinline__ u64 alloc_idx(const Tree *t, u32 k, u64 r) {
    u64 top = t->top[k];
    return r < top ? (u64)t->freel[k][top - 1 - r] : t->hwm[k] + (r - top);
}

__device__ __forceinline__ const u8 *leaf_key(const Tree *t, u64 l) {
    u64 *r = rec(t, l);
    if (lkind(l) == K_LV) return t->arena + (r[1] & INDEX_MASK);
    return (const u8 *)r;
}
__device__ __forceinline__ u32 batch_len(const Tree *t, u64 i) { return t->boffs[i + 1] - t->boffs[i]; }
// key_ptr is keySrc.key: a batch position or a leaf's key.
__device__ __forceinline__ const u8 *key_ptr(const Tree *t, u64 ref) {
    if (lkind(ref) == K_BATCH) return t->bdata + t->boffs[lidx(ref)];
    return leaf_key(t, ref);
}
__device__ __forceinline__ u64 leaf_value(const Tree *t, u64 l) { return rec(t, l)[value_word(lkind(l))]; }

__device__ __forceinline__ u32 plen_of(const u64 *r) { return (u32)(r[W_META] & 0xffff); }
__device__ __forceinline__ u32 count_of(const u64 *r) { return (u32)((r[W_META] >> 16) & 0xffff); }
__device__ __forceinline__ u64 meta_word(u32 plen, u32 count) { return (u64)plen | ((u64)count << 16); }
__device__ __forceinline__ const u8 *rbytes(const u64 *r) { return (const u8 *)r; }

// keys_equal and compare_keys: bytewise, a proper prefix first.
__device__ bool keys_equal(const u8 *a, u32 na, const u8 *b, u32 nb) {
    if (na != nb) return false;
    for (u32 i = 0; i < na; i++)
        if (a[i] != b[i]) return false;
    return true;
}
__device__ int compare_keys(const u8 *a, u32 na, const u8 *b, u32 nb) {
    u32 m = na < nb ? na : nb;
    for (u32 i = 0; i < m; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return na < nb ? -1 : na > nb ? 1 : 0;
}
// lcp_from is build.go's lcpFrom.
__device__ u32 lcp_from(const u8 *a, u32 na, const u8 *b, u32 nb, u32 from) {
    u32 m = na < nb ? na : nb;
    u32 i = from;
    while (i < m && a[i] == b[i]) i++;
    return i;
}

// Node positions (store.go's childAt, byteAt, positions, lowerPos,
// findChild).
__device__ __forceinline__ u32 positions(const u64 *r, u32 k) { return k == K_N256 ? 256 : count_of(r); }
__device__ __forceinline__ u32 child_word(u32 k, int p) {
    if (p < 0) return W_TERM;
    switch (k) {
    case K_N4: return N4_CHILD + p;
    case K_N16: return N16_CHILD + p;
    case K_N48: return N48_CHILD + p;
    default: return N256_CHILD + p;
    }
}
__device__ __forceinline__ u64 child_at(const u64 *r, u32 k, int p) { return r[child_word(k, p)]; }
__device__ int byte_at(const u64 *r, u32 k, int p) {
    const u8 *bs = rbytes(r);
    switch (k) {
    case K_N4: return bs[N4_KEYB + p];
    case K_N16: return bs[N16_KEYB + p];
    case K_N48:
        for (int c = 0; c < 256; c++)
            if (bs[N48_INDEXB + c] == p + 1) return c;
        return -1;
    }
    return p;
}
__device__ int lower_pos(const u64 *r, u32 k, u32 b, bool *exact) {
    const u8 *bs = rbytes(r);
    if (k == K_N4 || k == K_N16) {
        u32 off = k == K_N4 ? N4_KEYB : N16_KEYB;
        u32 c = count_of(r);
        for (u32 i = 0; i < c; i++)
            if (bs[off + i] >= b) {
                *exact = bs[off + i] == b;
                return i;
            }
        *exact = false;
        return c;
    }
    if (k == K_N48) {
        const u8 *idx = bs + N48_INDEXB;
        if (idx[b]) {
            *exact = true;
            return idx[b] - 1;
        }
        int p = 0;
        for (u32 c = 0; c < b; c++)
            if (idx[c]) p++;
        *exact = false;
        return p;
    }
    *exact = r[N256_CHILD + b] != 0;
    return b;
}
// find_word is the word holding the child at byte b, or -1.
__device__ int find_word(const u64 *r, u32 k, u32 b) {
    const u8 *bs = rbytes(r);
    if (k == K_N4 || k == K_N16) {
        u32 off = k == K_N4 ? N4_KEYB : N16_KEYB;
        u32 cw = k == K_N4 ? N4_CHILD : N16_CHILD;
        u32 c = count_of(r);
        for (u32 i = 0; i < c; i++)
            if (bs[off + i] == b) return cw + i;
        return -1;
    }
    if (k == K_N48) {
        u8 s = bs[N48_INDEXB + b];
        return s ? (int)(N48_CHILD + s - 1) : -1;
    }
    return r[N256_CHILD + b] ? (int)(N256_CHILD + b) : -1;
}
__device__ __forceinline__ u64 find_child(const u64 *r, u32 k, u32 b) {
    int w = find_word(r, k, b);
    return w < 0 ? 0 : r[w];
}

// min_leaf is store.minLeaf.
__device__ u64 min_leaf(const Tree *t, u64 l) {
    while (is_node(l)) {
        const u64 *r = rec(t, l);
        u32 k = lkind(l);
        if (r[W_TERM]) return r[W_TERM];
        if (k == K_N256) {
            u64 c = 0;
            for (int b = 0; b < 256 && !c; b++) c = r[N256_CHILD + b];
            l = c;
        } else {
            l = child_at(r, k, 0);
        }
    }
    return l;
}

// prefix_mismatch is store.prefixMismatch.
__device__ u32 prefix_mismatch(const Tree *t, u64 l, const u64 *r, const u8 *k, u32 n, u32 D) {
    u32 plen = plen_of(r);
    u32 avail = n - D;
    u32 st = plen < PREFIX_STORED ? plen : PREFIX_STORED;
    const u8 *pb = rbytes(r + W_PREFIX);
    for (u32 i = 0; i < st; i++)
        if (i >= avail || k[D + i] != pb[i]) return i;
    if (plen <= PREFIX_STORED) return plen;
    const u8 *full = leaf_key(t, min_leaf(t, l));
    for (u32 i = st; i < plen; i++)
        if (i >= avail || k[D + i] != full[D + i]) return i;
    return plen;
}

// root_slot is store.go's rootSlot.
__device__ u64 root_slot(const u8 *k, u32 n, u32 w, u64 tlen) {
    u64 v = 0;
    u32 m = n < w ? n : w;
    for (u32 i = 0; i < m; i++) v = (v << 8) | k[i];
    if (n >= w) return v;
    return tlen + short_offset(n) + v;
}

// BatchWalk is where the walk of a batch key down the tree begins, as
// store.go's walks begin it: the key k of kn bytes, the link l in its root
// slot, p the root parent word of that slot, and D the key bytes the root
// resolved (the width, or the whole key when shorter).
struct BatchWalk {
    const u8 *k;
    u32 kn;
    u64 l, p;
    u32 D;
};

// batch_walk starts the walk of batch key bp.
__device__ __forceinline__ BatchWalk batch_walk(const Tree *t, u32 bp) {
    const u8 *k = t->bdata + t->boffs[bp];
    u32 kn = batch_len(t, bp);
    u32 w = (u32)t->width;
    u64 slot = root_slot(k, kn, w, t->tlen);
    return BatchWalk{k, kn, t->root[slot], root_parent(slot), kn < w ? kn : w};
}

// last_start_le returns the largest s < n with start[s] <= x, for a
// nondecreasing start with start[0] <= x: the segment (or group) of
// consecutive items that holds item x. Binary search: O(log n).
__device__ __forceinline__ u32 last_start_le(const u32 *start, u64 n, u64 x) {
    u64 lo = 0, hi = n;
    while (hi - lo > 1) {
        u64 mid = (lo + hi) / 2;
        if (start[mid] <= x) lo = mid;
        else hi = mid;
    }
    return (u32)lo;
}

// find_leaf is store.findLeaf: the lookup walk.
__device__ u64 find_leaf(const Tree *t, const u8 *k, u32 n) {
    u32 w = (u32)t->width;
    u64 l = t->root[root_slot(k, n, w, t->tlen)];
    u32 D = n < w ? n : w;
    while (l) {
        if (is_leaf(l)) {
            if (laux(l) != n) return 0;
            const u8 *lk = leaf_key(t, l);
            for (u32 i = 0; i < n; i++)
                if (lk[i] != k[i]) return 0;
            return l;
        }
        const u64 *r = rec(t, l);
        u32 plen = plen_of(r);
        if (n < D + plen) return 0;
        u32 st = plen < PREFIX_STORED ? plen : PREFIX_STORED;
        const u8 *pb = rbytes(r + W_PREFIX);
        for (u32 i = 0; i < st; i++)
            if (k[D + i] != pb[i]) return 0;
        u32 d = D + plen;
        l = n == d ? r[W_TERM] : find_child(r, lkind(l), k[d]);
        D = d + 1;
    }
    return 0;
}

// entry_order is nodes.go's entryOrder.
__device__ __forceinline__ u64 entry_order(u64 node, u32 code) {
    return ((u64)lkind(node) << 49) | (lidx(node) << 9) | code;
}
