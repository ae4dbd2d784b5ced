// sort.cu: Sorting a batch's keys: as_* (sort_gpu.go launches them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"

// ---------------------------------------------------------------------------
// Sorting the batch's keys (sort_gpu.go): rounds of 7 key bytes. A chunk
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

// as_chunk: one thread per active element y = lo + x, x < m: the chunk j
// of the key at sorted place apos[y], and y as the payload. lo is 0 but
// in round 0 of a batch uploaded in parts (sort_parts_gpu.go), where each
// part's elements [lo, lo+m) are chunked as soon as the part lands.
extern "C" __global__ void as_chunk(const Tree *t, u64 m, u64 lo, const u32 *perm, const u32 *apos, u32 j, u64 *ck, u32 *cv) {
    GRID_STRIDE(x, m) {
        u64 y = lo + x;
        u32 p = perm[apos[y]];
        ck[y] = chunk_of(t->bdata + t->boffs[p], batch_len(t, p), j);
        cv[y] = (u32)y;
    }
}

// as_offsets: one thread per offset i <= n of a batch whose keys all have
// len bytes (sort_parts_gpu.go: the host checked them and uploads no
// offsets): offs[i] = i * len.
extern "C" __global__ void as_offsets(u64 n1, u32 len, u32 *offs) {
    GRID_STRIDE(i, n1) offs[i] = (u32)i * len;
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

// active_chunk is chunk j of the element at active place x: sck[x] when
// the chunks are given in place order (round 0, whose one sort leaves its
// keys in that order), else read from the key.
__device__ __forceinline__ u64 active_chunk(const Tree *t, const u32 *perm, const u32 *apos, const u64 *sck, u64 x, u32 j) {
    if (sck) return sck[x];
    u32 p = perm[apos[x]];
    return chunk_of(t->bdata + t->boffs[p], batch_len(t, p), j);
}

// as_marks: one thread per x: start[x] = 1 when x starts a group of equal
// (run, chunk j); unres[x] = 1 when x's group has another element and its
// keys go on past the chunk (they need the next round). sck, when not
// null, are the chunks in place order (see active_chunk): no key is read.
extern "C" __global__ void as_marks(const Tree *t, u64 m, const u32 *perm, const u32 *apos, const u32 *k2, u32 j,
                                    const u64 *sck, u32 *start, u8 *unres) {
    GRID_STRIDE(x, m) {
        u64 c = active_chunk(t, perm, apos, sck, x, j);
        bool s = x == 0;
        if (!s) s = k2[x] != k2[x - 1] || c != active_chunk(t, perm, apos, sck, x - 1, j);
        bool e = x + 1 == m;
        if (!e) e = k2[x] != k2[x + 1] || c != active_chunk(t, perm, apos, sck, x + 1, j);
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
// sck, when not null, are chunk 0 of every place (round 0): different
// chunks are different keys, and equal chunks of keys that end in them
// (length clamp under 8) equal keys, without reading the keys.
extern "C" __global__ void as_last(const Tree *t, u64 n, const u32 *perm, const u64 *sck, u8 *flag) {
    GRID_STRIDE(p, n) {
        bool last = p + 1 == n;
        if (!last) {
            bool known = false;
            if (sck) {
                u64 ca = sck[p], cb = sck[p + 1];
                if (ca != cb) last = known = true;
                else if ((ca & 0xff) < 8) known = true;
            }
            if (!known) {
                u32 a = perm[p], b = perm[p + 1];
                last = !keys_equal(t->bdata + t->boffs[a], batch_len(t, a), t->bdata + t->boffs[b], batch_len(t, b));
            }
        }
        flag[p] = last;
    }
}

// as_prefixes: one thread per sorted distinct key: sort.go's
// distinctPrefixes (counts[w-1] += keys starting a new w-byte prefix).
// Each thread counts its keys', each warp adds its lanes' sums once after
// the loop (every lane of every warp reaches it: whole blocks, no early
// exit), not one atomic per key on three counters (about 17M on the
// 3-byte one for 100M random keys).
extern "C" __global__ void as_prefixes(const Tree *t, u64 n, const u32 *order, unsigned long long *counts) {
    u64 mine[MAX_WIDTH];
    for (u32 w = 0; w < MAX_WIDTH; w++) mine[w] = 0;
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
            if (fresh) mine[w - 1]++;
        }
    }
    for (u32 w = 0; w < MAX_WIDTH; w++) {
        u64 c = mine[w];
        for (int d = WARP / 2; d > 0; d >>= 1) c += __shfl_xor_sync(FULL_MASK, c, d);
        if ((threadIdx.x & (WARP - 1)) == 0 && c) atomicAdd(&counts[w], (unsigned long long)c);
    }
}
