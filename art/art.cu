// CuART kernels: the GPU engine of package art (gpu*.go launch them).
//
// The tree is the CPU engine's store, flat in device memory: one record
// buffer per kind (N4, N16, N48, N256 nodes; L8, L16, L32, LV leaves),
// record i of kind k at pool[k] + i*kwords(k); links are kind<<60 |
// aux<<40 | index; the root array holds 256^W table entries, then the
// short slots. Every kernel mirrors a function of the CPU engine (named
// in its comment) step by step, so that both engines write the same words
// and a GPU-vs-CPU difference points at one kernel. All constants come
// from Go as defines (layoutDefines in layout.go, kernelDefines in
// kernels.go).
//
// Thread mapping: every kernel is one thread per item (key, segment,
// piece, touched node, entry, query) with a grid-stride loop. No kernel
// takes a lock: every output word has one writer per launch, by the
// batch's sorting and grouping; the update conflict table uses
// compare-and-swap and atomic max, the append-only lists atomic adds
// (their order is fixed by a sort afterwards).
#include "warpkv/types.cuh"

#define GRID_STRIDE(i, n) for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (u64)(n); i += (u64)gridDim.x * blockDim.x)

// Tree is the descriptor the host writes before each step (gpu.go's
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
static_assert(sizeof(Tree) == DESC_WORDS * 8, "Tree differs from gpu.go's treeDesc");

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

// a_iota: one thread per i: out[i] = i.
extern "C" __global__ void a_iota(u64 n, u32 *out) {
    GRID_STRIDE(i, n) out[i] = (u32)i;
}

// ---------------------------------------------------------------------------
// Lookups and CuART's two-stage update (get.go)

// ag_get: one thread per batch key of keys [base, base+n) (batch order;
// a pipelined call launches it per chunk): store.lookup. Writes
// vals[base+j], found[base+j].
extern "C" __global__ void ag_get(const Tree *t, u64 base, u64 n, u64 *vals, u8 *found) {
    GRID_STRIDE(j, n) {
        u64 i = base + j;
        u64 l = find_leaf(t, t->bdata + t->boffs[i], batch_len(t, i));
        vals[i] = l ? leaf_value(t, l) : 0;
        found[i] = l != 0;
    }
}

// ag_update_mark: one thread per batch key of keys [base, base+n) (a
// pipelined call launches it per chunk, all before ag_update_write),
// stage 1 of store.update: the key's leaf, and its batch position + 1
// kept in the conflict table if it is the highest for that leaf (2^bits
// slots, linear probing).
extern "C" __global__ void ag_update_mark(const Tree *t, u64 base, u64 n, u64 *leaf, u8 *found, u64 *tk, u32 *tp, u32 bits) {
    u64 mask = (1ull << bits) - 1;
    GRID_STRIDE(j, n) {
        u64 i = base + j;
        u64 l = find_leaf(t, t->bdata + t->boffs[i], batch_len(t, i));
        leaf[i] = l;
        found[i] = l != 0;
        if (!l) continue;
        u64 h = (l * 0x9E3779B97F4A7C15ull) >> (64 - bits);
        for (;;) {
            u64 prev = atomicCAS(&tk[h], 0ull, l);
            if (prev == 0 || prev == l) {
                atomicMax(&tp[h], (u32)(i + 1));
                break;
            }
            h = (h + 1) & mask;
        }
    }
}

// ag_update_write: one thread per batch key, stage 2: the key whose
// position the table kept writes its value (one writer per leaf).
extern "C" __global__ void ag_update_write(const Tree *t, u64 n, const u64 *leaf, const u64 *tk, const u32 *tp, u32 bits) {
    u64 mask = (1ull << bits) - 1;
    GRID_STRIDE(i, n) {
        u64 l = leaf[i];
        if (!l) continue;
        u64 h = (l * 0x9E3779B97F4A7C15ull) >> (64 - bits);
        while (tk[h] != l) h = (h + 1) & mask;
        if (tp[h] == (u32)(i + 1)) rec(t, l)[value_word(lkind(l))] = t->bvals[i];
    }
}

// ---------------------------------------------------------------------------
// Sorting the batch's keys (gpu_sort.go): rounds of 7 key bytes. A chunk
// is 7 bytes big-endian then min(bytes left, 8): equal chunks with 8 there
// continue in the next round.

__device__ __forceinline__ u64 chunk_of(const u8 *k, u32 n, u32 j) {
    u64 start = 7ull * j;
    u64 rem = n > start ? n - start : 0;
    u64 v = 0;
    for (u32 b = 0; b < 7; b++) {
        v <<= 8;
        if (b < rem) v |= k[start + b];
    }
    return (v << 8) | (rem < 8 ? rem : 8);
}

// as_chunk: one thread per active element x: the chunk j of the key at
// sorted place apos[x], and x as the payload.
extern "C" __global__ void as_chunk(const Tree *t, u64 m, const u32 *perm, const u32 *apos, u32 j, u64 *ck, u32 *cv) {
    GRID_STRIDE(x, m) {
        u32 p = perm[apos[x]];
        ck[x] = chunk_of(t->bdata + t->boffs[p], batch_len(t, p), j);
        cv[x] = (u32)x;
    }
}

// as_runkey: one thread per x: the run of the element sorted to x, for
// the second (stable) sort.
extern "C" __global__ void as_runkey(u64 m, const u32 *cv, const u32 *arun, u32 *k2, u32 *v2) {
    GRID_STRIDE(x, m) {
        k2[x] = arun[cv[x]];
        v2[x] = cv[x];
    }
}

// as_permute and as_scatter: the active places get their elements in the
// new order (through tmp, as every place is read before any is written).
extern "C" __global__ void as_permute(u64 m, const u32 *perm, const u32 *apos, const u32 *v2, u32 *tmp) {
    GRID_STRIDE(x, m) tmp[x] = perm[apos[v2[x]]];
}
extern "C" __global__ void as_scatter(u64 m, u32 *perm, const u32 *apos, const u32 *tmp) {
    GRID_STRIDE(x, m) perm[apos[x]] = tmp[x];
}

// as_marks: one thread per x: start[x] = 1 when x starts a group of equal
// (run, chunk j); unres[x] = 1 when x's group has another element and its
// keys go on past the chunk (they need the next round).
extern "C" __global__ void as_marks(const Tree *t, u64 m, const u32 *perm, const u32 *apos, const u32 *k2, u32 j,
                                    u32 *start, u8 *unres) {
    GRID_STRIDE(x, m) {
        u32 p = perm[apos[x]];
        u64 c = chunk_of(t->bdata + t->boffs[p], batch_len(t, p), j);
        bool s = x == 0;
        if (!s) {
            u32 q = perm[apos[x - 1]];
            s = k2[x] != k2[x - 1] || c != chunk_of(t->bdata + t->boffs[q], batch_len(t, q), j);
        }
        bool e = x + 1 == m;
        if (!e) {
            u32 q = perm[apos[x + 1]];
            e = k2[x] != k2[x + 1] || c != chunk_of(t->bdata + t->boffs[q], batch_len(t, q), j);
        }
        start[x] = s;
        unres[x] = (c & 0xff) == 8 && !(s && e);
    }
}

// as_first and as_newrun: an element's next run is its group's first
// place (grp = inclusive scan of start).
extern "C" __global__ void as_first(u64 m, const u32 *start, const u32 *grp, const u32 *apos, u32 *first) {
    GRID_STRIDE(x, m) if (start[x]) first[grp[x] - 1] = apos[x];
}
extern "C" __global__ void as_newrun(u64 m, const u32 *grp, const u32 *first, u32 *run) {
    GRID_STRIDE(x, m) run[x] = first[grp[x] - 1];
}

// as_last: one thread per sorted place p: 1 when the key there differs
// from the next (sort.go's lastOfRuns: the batch's last occurrence wins).
extern "C" __global__ void as_last(const Tree *t, u64 n, const u32 *perm, u8 *flag) {
    GRID_STRIDE(p, n) {
        bool last = p + 1 == n;
        if (!last) {
            u32 a = perm[p], b = perm[p + 1];
            last = !keys_equal(t->bdata + t->boffs[a], batch_len(t, a), t->bdata + t->boffs[b], batch_len(t, b));
        }
        flag[p] = last;
    }
}

// as_prefixes: one thread per sorted distinct key: sort.go's
// distinctPrefixes (counts[w-1] += keys starting a new w-byte prefix).
extern "C" __global__ void as_prefixes(const Tree *t, u64 n, const u32 *order, unsigned long long *counts) {
    GRID_STRIDE(i, n) {
        u32 p = order[i];
        const u8 *k = t->bdata + t->boffs[p];
        u32 kn = batch_len(t, p);
        for (u32 w = 1; w <= MAX_WIDTH; w++) {
            if (kn < w) break;
            bool fresh = i == 0;
            if (!fresh) {
                u32 q = order[i - 1];
                const u8 *pk = t->bdata + t->boffs[q];
                fresh = batch_len(t, q) < w;
                for (u32 b = 0; b < w && !fresh; b++) fresh = pk[b] != k[b];
            }
            if (fresh) atomicAdd(&counts[w - 1], 1ull);
        }
    }
}

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
    GRID_STRIDE(i, nIt) {
        u64 lo = 0, hi = S;
        while (hi - lo > 1) {
            u64 mid = (lo + hi) / 2;
            if (sstart[mid] <= i) lo = mid;
            else hi = mid;
        }
        iseg[i] = (u32)lo;
    }
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

// ab_count: one thread per segment (step 3): a node segment's children and
// kind, or a new leaf's class (kind 0: an old item, nothing allocated);
// the allocation requests as pairs of 32-bit counters (kinds 1-2, 3-4, 5-6,
// 7-8) and arena bytes, for the exclusive scans of step 4.
extern "C" __global__ void ab_count(u64 S, const u32 *sstart, const u32 *send, const u32 *hterm, const u32 *flag, const u32 *pex,
                                    const u64 *iold, const u32 *ilen, u32 *children, u32 *kind,
                                    u64 *r12, u64 *r34, u64 *r56, u64 *r78, u64 *abytes) {
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
                k = kind_for(c);
            } else if (iold[a] == 0) {
                k = leaf_kind(ilen[a]);
                if (k == K_LV) ab = round_arena(ilen[a]);
            }
            kind[s] = k;
            if (k) req[(k - 1) / 2] = 1ull << (32 * ((k - 1) % 2));
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

// rank_of is an allocation's rank in its kind from the scanned pairs.
__device__ __forceinline__ u64 rank_of(u32 k, u64 s, const u64 *r12, const u64 *r34, const u64 *r56, const u64 *r78) {
    const u64 *p = k <= 2 ? r12 : k <= 4 ? r34 : k <= 6 ? r56 : r78;
    u64 v = p[s];
    return (k % 2) ? (v & 0xffffffffull) : (v >> 32);
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
            for (u32 w = 0; w < kw; w++) r[w] = 0;
            u32 d = depth[s], D = sd[s];
            r[W_META] = meta_word(d - D, children[s]);
            r[W_PREFIX] = pack_prefix(item_key(t, iref, a) + D, d - D);
            r[W_PARENT] = spar[s];
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
                u32 kw = kwords(k);
                for (u32 w = 0; w < kw; w++) r[w] = 0;
                u8 *rb = (u8 *)r;
                for (u32 b = 0; b < n; b++) rb[b] = key[b];
                r[value_word(k)] = v;
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

// ---------------------------------------------------------------------------
// Insert (insert.go): classify, group by edge, items, entries.

// ai_classify: one thread per sorted distinct key i: store.classify. The
// slot is stored plus one (0 the terminator; root edges 1, as slot 0).
extern "C" __global__ void ai_classify(const Tree *t, u64 n, const u32 *order, u8 *cls, u64 *par, u32 *slot1, u64 *tgt,
                                       u32 *gd, u8 *fresh) {
    GRID_STRIDE(i, n) {
        u32 bp = order[i];
        const u8 *k = t->bdata + t->boffs[bp];
        u32 kn = batch_len(t, bp);
        u32 w = (u32)t->width;
        u64 slot = root_slot(k, kn, w, t->tlen);
        u64 l = t->root[slot];
        u64 p = root_parent(slot);
        int sl = 0;
        u32 D = kn < w ? kn : w;
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
        u64 lo = 0, hi = G;
        while (hi - lo > 1) {
            u64 mid = (lo + hi) / 2;
            if (gstart[mid] <= x) lo = mid;
            else hi = mid;
        }
        u32 g = (u32)lo;
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

// ai_entries: one thread per group: its node entry (an add at an empty
// slot, or the set of a split slot) at 2g and its old node's trim at 2g+1;
// invalid entries (root edges, no trim) get the largest sort key. valid
// counts the others.
extern "C" __global__ void ai_entries(u64 G, const u32 *gstart, const u32 *fs, const u8 *cls, const u64 *par, const u32 *slot1,
                                      const u64 *tgt, const u64 *glink, u64 *ekey, u64 *enode, u32 *ecode, u32 *eop,
                                      u64 *elink, u32 *egrp, unsigned long long *valid) {
    GRID_STRIDE(g, G) {
        u32 i0 = fs[gstart[g]];
        u64 p = par[i0];
        u64 e0 = 2 * g, e1 = 2 * g + 1;
        ekey[e0] = ~0ull;
        ekey[e1] = ~0ull;
        u32 n = 0;
        if (lkind(p) != K_ROOT) {
            enode[e0] = p;
            ecode[e0] = slot1[i0];
            eop[e0] = cls[i0] == CLS_ADD ? OP_ADD : OP_SET;
            elink[e0] = glink[g];
            egrp[e0] = (u32)g;
            ekey[e0] = entry_order(p, slot1[i0]);
            n++;
        }
        if (cls[i0] == CLS_SPLIT && is_node(tgt[i0])) {
            u64 T = node_id(tgt[i0]);
            enode[e1] = T;
            ecode[e1] = CODE_TRIM;
            eop[e1] = OP_TRIM;
            elink[e1] = 0;
            egrp[e1] = (u32)g;
            ekey[e1] = entry_order(T, CODE_TRIM);
            n++;
        }
        if (n) atomicAdd(valid, (unsigned long long)n);
    }
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

// find_touched: the touched index of node, or -1 (binary search).
__device__ long find_touched(const u64 *snode, const u32 *tstart, u64 T, u64 node) {
    u64 key = entry_order(node, 0);
    u64 lo = 0, hi = T;
    while (lo < hi) {
        u64 mid = (lo + hi) / 2;
        if (entry_order(snode[tstart[mid]], 0) < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < T && snode[tstart[lo]] == node ? (long)lo : -1;
}

// find_run: the moved entries [a, b) aimed at node.
__device__ void find_run(const u64 *mnode, u64 M, u64 node, u64 *a, u64 *b) {
    u64 key = entry_order(node, 0);
    u64 lo = 0, hi = M;
    while (lo < hi) {
        u64 mid = (lo + hi) / 2;
        if (entry_order(mnode[mid], 0) < key) lo = mid + 1;
        else hi = mid;
    }
    u64 e = lo;
    while (e < M && mnode[e] == node) e++;
    *a = lo;
    *b = e;
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
    const u32 *ac, *aop;
    const u64 *al;
    u64 ai, ae;
    const u32 *bc, *bop;
    const u64 *bl;
    u64 bi, be;
};

__device__ void merge_next_old(Merge *m) {
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

// merge_init starts m over node record r of kind k with entries [ai, ae)
// and moved entries [bi, be) (codes sorted), and returns the merged
// terminator.
__device__ u64 merge_init(Merge *m, const u64 *r, u32 k, const u32 *ac, const u32 *aop, const u64 *al, u64 ai, u64 ae,
                          const u32 *bc, const u32 *bop, const u64 *bl, u64 bi, u64 be) {
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
            u64 tm = merge_init(&m, r, lkind(node), scode, sop, slink, a, b, 0, 0, 0, 0, 0);
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
        u64 v = o == OUT_MOVE ? 1ull << (32 * ((nk - 1) % 2)) : 0;
        m12[ti] = nk <= 2 ? v : 0;
        m34[ti] = nk > 2 ? v : 0;
    }
}

// an_final: one thread per touched node: its link after the round (the
// allocated record of a move).
extern "C" __global__ void an_final(const Tree *t, u64 T, const u32 *tstart, const u64 *snode, const u8 *out, const u32 *nkind,
                                    const u64 *m12, const u64 *m34, u64 *final_) {
    GRID_STRIDE(ti, T) {
        u64 node = snode[tstart[ti]];
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

// an_write: one thread per touched node (U3): the merged node written at
// its place (the new record of a move; in place otherwise: N256 by direct
// edits, N4, N16 and N48 through a local copy of at most 48 children), its
// parent word, and the parent words of its inner children that no other
// writer sets (writeNode and the loop after it in round.go). A collapsing
// node writes its remaining inner child's joined prefix and parent word.
extern "C" __global__ void an_write(const Tree *t, u64 T, int insert, const u32 *tstart, const u64 *snode, const u32 *scode,
                                    const u32 *sop, const u64 *slink, const u32 *sgrp, const u8 *out, const u32 *nkind,
                                    const u8 *htrim, const u64 *final_, const u64 *rem, const u32 *remb,
                                    const u64 *mnode, const u32 *mcode, const u32 *mop, const u64 *mlink, u64 M,
                                    const u32 *gtn, const u64 *gtref, const u32 *trimd, const u64 *trimpar) {
    GRID_STRIDE(ti, T) {
        u32 a = tstart[ti], b = tstart[ti + 1];
        u64 node = snode[a];
        u32 k = lkind(node);
        u64 *r = rec(t, node);
        u8 o = out[ti];
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
        if (insert) find_run(mnode, M, node, &ma, &mb);
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
                long p = find_touched(snode, tstart, T, node_id(pw));
                if (p >= 0 && out[p] == OUT_MOVE) pw = parent_word(final_[p], laux(pw));
            }
        }
        u64 fl = final_[ti];
        u32 fk = lkind(fl);
        bool moved = o == OUT_MOVE;
        Merge m;
        u64 term = merge_init(&m, r, k, scode, sop, slink, a, b, mcode, mop, mlink, ma, mb);
        u32 cb, src;
        u64 cl;
        u32 n = 0;
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
                if (is_node(cl) && src != SRC_MOVED && !(src == SRC_OLD && find_touched(snode, tstart, T, cl) >= 0))
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
        // In place, N4, N16, N48: at most 48 children (the kind did not
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

// an_moved_inplace: one thread per moved entry whose target is not
// touched in the round (U4): the moved child's new link in place.
extern "C" __global__ void an_moved_inplace(const Tree *t, u64 M, const u64 *mnode, const u32 *mcode, const u64 *mlink,
                                            const u32 *tstart, const u64 *snode, u64 T) {
    GRID_STRIDE(e, M) {
        u64 p = mnode[e];
        if (find_touched(snode, tstart, T, p) >= 0) continue;
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

// an_free_flags: one thread per touched node: 1 when the round frees it
// and it is of kind k (U5: frees per kind in node order).
extern "C" __global__ void an_free_flags(u64 T, const u32 *tstart, const u64 *snode, const u8 *out, u32 k, u8 *flag) {
    GRID_STRIDE(ti, T) flag[ti] = out[ti] != OUT_STAY && lkind(snode[tstart[ti]]) == k;
}

// ---------------------------------------------------------------------------
// Delete (delete.go)

// ad_find: one thread per sorted distinct key: store.findHit (the leaf, the
// node holding it or a root parent word, the slot plus one, the node's
// depth, -1 for a leaf in the root array).
extern "C" __global__ void ad_find(const Tree *t, u64 n, const u32 *order, u8 *found, u64 *leaf, u64 *par, u32 *slot1, int *depth) {
    GRID_STRIDE(i, n) {
        u32 bp = order[i];
        const u8 *k = t->bdata + t->boffs[bp];
        u32 kn = batch_len(t, bp);
        u32 w = (u32)t->width;
        u64 slot = root_slot(k, kn, w, t->tlen);
        u64 l = t->root[slot];
        u64 p = root_parent(slot);
        int sl = 0, dep = -1;
        u32 D = kn < w ? kn : w;
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

// cur_prev is store.prev: the next leaf descending, 0 at the start.
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

// aq_scan: one thread per query (store.scan): with write 0 it counts the
// query's pairs and key bytes into cnt[q], bytes[q] (and 0 at [Q], for the
// scans); with write 1 it writes them at the scanned offsets.
extern "C" __global__ void aq_scan(const Tree *t, u64 Q, const u8 *lod, const u32 *loo, const u8 *hid, const u32 *hio,
                                   const u8 *hashi, u64 limit, int desc, int write, u64 *cnt, u64 *bytes, u8 *okeys,
                                   u32 *ooffs, u64 *ovals) {
    GRID_STRIDE(q, Q + 1) {
        if (q == Q) {
            if (!write) {
                cnt[Q] = 0;
                bytes[Q] = 0;
            }
            continue;
        }
        const u8 *lo = lod + loo[q];
        u32 ln = loo[q + 1] - loo[q];
        const u8 *hi = hid + hio[q];
        u32 hn = hio[q + 1] - hio[q];
        bool has = hashi[q];
        u64 j = write ? cnt[q] : 0, o = write ? bytes[q] : 0;
        u64 c = 0, by = 0;
        Cur cur = desc ? seek_lt(t, hi, hn, has) : seek_ge(t, lo, ln);
        while (limit == 0 || c < limit) {
            u64 l = desc ? cur_prev(t, &cur) : cur_next(t, &cur);
            if (!l) break;
            const u8 *k = leaf_key(t, l);
            u32 kn = laux(l);
            if (!desc && has && compare_keys(k, kn, hi, hn) >= 0) break;
            if (desc && compare_keys(k, kn, lo, ln) < 0) break;
            if (write) {
                ooffs[j] = (u32)o;
                for (u32 b = 0; b < kn; b++) okeys[o + b] = k[b];
                ovals[j] = leaf_value(t, l);
                j++;
                o += kn;
            }
            c++;
            by += kn;
        }
        if (!write) {
            cnt[q] = c;
            bytes[q] = by;
        }
    }
}

// aq_collect: one thread per query, the single walk of a bounded batch of
// queries (limit > 0; store.rangesSlots): query q's pairs' leaves go to
// slots[q*limit + j] in answer order, with pres = 1 and len = the key's
// length; the slots after its last pair get 0, 0, 0; thread Q writes the
// zero after the last slot (S = Q*limit), so that exclusive scans of pres
// and len give every pair's place and key offset and their totals at S.
extern "C" __global__ void aq_collect(const Tree *t, u64 Q, const u8 *lod, const u32 *loo, const u8 *hid, const u32 *hio,
                                      const u8 *hashi, u64 limit, int desc, u64 *slots, u64 *pres, u64 *lens) {
    GRID_STRIDE(q, Q + 1) {
        if (q == Q) {
            pres[Q * limit] = 0;
            lens[Q * limit] = 0;
            continue;
        }
        const u8 *lo = lod + loo[q];
        u32 ln = loo[q + 1] - loo[q];
        const u8 *hi = hid + hio[q];
        u32 hn = hio[q + 1] - hio[q];
        bool has = hashi[q];
        u64 c = 0, at = q * limit;
        Cur cur = desc ? seek_lt(t, hi, hn, has) : seek_ge(t, lo, ln);
        while (c < limit) {
            u64 l = desc ? cur_prev(t, &cur) : cur_next(t, &cur);
            if (!l) break;
            const u8 *k = leaf_key(t, l);
            u32 kn = laux(l);
            if (!desc && has && compare_keys(k, kn, hi, hn) >= 0) break;
            if (desc && compare_keys(k, kn, lo, ln) < 0) break;
            slots[at + c] = l;
            pres[at + c] = 1;
            lens[at + c] = kn;
            c++;
        }
        for (; c < limit; c++) {
            slots[at + c] = 0;
            pres[at + c] = 0;
            lens[at + c] = 0;
        }
    }
}

// aq_emit: one thread per slot s of aq_collect (S = Q*limit of them, and
// thread S): a pair's key bytes, key offset and value written at its
// scanned place pidx[s] (key offset boff[s]); the first slot of query q
// writes the query's first place qoff[q], thread S the total qoff[Q].
extern "C" __global__ void aq_emit(const Tree *t, u64 S, u64 limit, const u64 *slots, const u64 *pidx, const u64 *boff,
                                   u8 *okeys, u32 *ooffs, u64 *ovals, u64 *qoff) {
    GRID_STRIDE(s, S + 1) {
        if (s % limit == 0) qoff[s / limit] = pidx[s];
        if (s == S) continue;
        u64 l = slots[s];
        if (!l) continue;
        u64 j = pidx[s], o = boff[s];
        const u8 *k = leaf_key(t, l);
        u32 kn = laux(l);
        ooffs[j] = (u32)o;
        for (u32 b = 0; b < kn; b++) okeys[o + b] = k[b];
        ovals[j] = leaf_value(t, l);
    }
}

// ---------------------------------------------------------------------------
// Arena compaction (arena.go)

// ac_sizes: one thread per LV record: its live rounded length (0 when
// dead), for the exclusive scan of the new offsets; sz[n] = 0.
extern "C" __global__ void ac_sizes(const Tree *t, u64 n, u64 *sz) {
    GRID_STRIDE(i, n + 1) {
        if (i == n) {
            sz[i] = 0;
            continue;
        }
        u64 w = t->pool[K_LV][2 * i + 1];
        sz[i] = w == LV_DEAD ? 0 : round_arena(w >> AUX_SHIFT);
    }
}

// ac_move: one thread per live LV record: its key bytes copied to the new
// arena at its scanned offset, and its arena word updated.
extern "C" __global__ void ac_move(const Tree *t, u64 n, const u64 *off, u8 *na) {
    GRID_STRIDE(i, n) {
        u64 *w = t->pool[K_LV] + 2 * i + 1;
        if (*w == LV_DEAD) continue;
        u64 o = *w & INDEX_MASK, len = *w >> AUX_SHIFT;
        u64 rn = round_arena(len);
        for (u64 b = 0; b < rn; b++) na[off[i] + b] = t->arena[o + b];
        *w = off[i] | (len << AUX_SHIFT);
    }
}

// ---------------------------------------------------------------------------
// Lookups with LANES lanes per key (gpu_query.go, Options.LookupLanes): the
// lanes of a group walk the same path together and split the byte
// comparisons (the stored prefix and, at the leaf, the whole key: lane i
// compares bytes i, i+LANES, ...) and an N4/N16 key search, deciding by
// votes; long keys and wide nodes cost a fraction of one thread's work.

// ag_get_lanes: one group of LANES lanes per batch key of keys [base,
// base+n) (keys = threads / LANES, grid-stride by groups); the group's
// first lane writes the answer.
extern "C" __global__ void ag_get_lanes(const Tree *t, u64 base, u64 n, u64 *vals, u8 *found) {
    const u32 lane = threadIdx.x % LANES;
    const u32 gmask = (u32)(((1ull << LANES) - 1) << (threadIdx.x % WARP / LANES * LANES));
    const u64 groups = (u64)gridDim.x * blockDim.x / LANES;
    for (u64 g = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / LANES; g < ((n + groups - 1) / groups) * groups; g += groups) {
        // Every lane of a warp runs the same number of iterations (a
        // padded bound), so the votes below see whole groups.
        bool live = g < n;
        u64 i = base + g;
        const u8 *k = live ? t->bdata + t->boffs[i] : 0;
        u32 kn = live ? batch_len(t, i) : 0;
        u32 w = (u32)t->width;
        u64 l = live ? t->root[root_slot(k, kn, w, t->tlen)] : 0;
        u32 D = kn < w ? kn : w;
        u64 hit = 0;
        while (__any_sync(gmask, l != 0)) {
            if (is_leaf(l)) {
                bool same = laux(l) == kn;
                const u8 *lk = leaf_key(t, l);
                for (u32 b = lane; same && b < kn; b += LANES) same = lk[b] == k[b];
                if (__all_sync(gmask, same)) hit = l;
                l = 0;
                continue;
            }
            const u64 *r = rec(t, l);
            u32 plen = plen_of(r);
            bool ok = kn >= D + plen;
            u32 st = plen < PREFIX_STORED ? plen : PREFIX_STORED;
            const u8 *pb = rbytes(r + W_PREFIX);
            for (u32 b = lane; ok && b < st; b += LANES) ok = k[D + b] == pb[b];
            if (!__all_sync(gmask, ok)) {
                l = 0;
                continue;
            }
            u32 d = D + plen;
            u32 kind = lkind(l);
            if (kn == d) {
                l = r[W_TERM];
            } else if (kind == K_N4 || kind == K_N16) {
                u32 c = count_of(r);
                u32 off = kind == K_N4 ? N4_KEYB : N16_KEYB;
                u32 cw = kind == K_N4 ? N4_CHILD : N16_CHILD;
                int at = -1;
                for (u32 j = lane; j < 16; j += LANES)
                    if (j < c && rbytes(r)[off + j] == k[d]) at = (int)j;
                // The matching lane (one at most) gives the slot.
                u32 who = __ballot_sync(gmask, at >= 0) & gmask;
                int src = who ? __ffs(who) - 1 : (int)(threadIdx.x % WARP);
                at = __shfl_sync(gmask, at, src);
                l = at >= 0 ? r[cw + at] : 0;
            } else {
                l = find_child(r, kind, k[d]);
            }
            D = d + 1;
        }
        if (live && lane == 0) {
            vals[i] = hit ? leaf_value(t, hit) : 0;
            found[i] = hit != 0;
        }
    }
}
