// get.cu: Lookups and updates: ag_get, ag_update_mark, ag_update_write, ag_get_lanes (get_gpu.go and point_gpu.go launch them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"

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
// Lookups with LANES lanes per key (get_gpu.go, Options.LookupLanes): the
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
