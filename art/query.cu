// query.cu: Range and prefix queries: aq_* (query_gpu.go launches them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"
#include "art/iterate.cu"

// aq_order_keys: one thread per query q: sk[q] is the first 8 bytes of
// the key its walk starts from (lo ascending; hi descending, all ones
// without a bound), big-endian and zero-padded, and perm[q] = q, for a
// sort of the queries by start (aq_scan_perm and aq_collect_perm take the
// queries in perm's order, so that neighbouring threads walk neighbouring
// paths).
extern "C" __global__ void aq_order_keys(u64 Q, const u8 *lod, const u32 *loo, const u8 *hid, const u32 *hio,
                                         const u8 *hashi, int desc, u64 *sk, u32 *perm) {
    GRID_STRIDE(q, Q) {
        const u8 *k = desc ? hid + hio[q] : lod + loo[q];
        u32 n = desc ? hio[q + 1] - hio[q] : loo[q + 1] - loo[q];
        n = n < 8 ? n : 8;
        u64 v = n == 0 ? 0 : be_uint(k, n) << (8 * (8 - n)); // n == 0: no shift by 64
        sk[q] = desc && !hashi[q] ? ~0ull : v;
        perm[q] = (u32)q;
    }
}

// Range is query q's bounds: lo (ln bytes) and, when has, hi (hn bytes).
struct Range {
    const u8 *lo, *hi;
    u32 ln, hn;
    bool has;
};

// range_of reads query q's Range from the batch's bound arrays.
__device__ __forceinline__ Range range_of(u64 q, const u8 *lod, const u32 *loo, const u8 *hid, const u32 *hio,
                                          const u8 *hashi) {
    Range r;
    r.lo = lod + loo[q];
    r.ln = loo[q + 1] - loo[q];
    r.hi = hid + hio[q];
    r.hn = hio[q + 1] - hio[q];
    r.has = hashi[q];
    return r;
}

// scan_query is query q of aq_scan (q == Q: the zeros after the counts).
__device__ __forceinline__ void scan_query(const Tree *t, u64 Q, u64 q, const u8 *lod, const u32 *loo, const u8 *hid,
                                           const u32 *hio, const u8 *hashi, u64 limit, int desc, int write, u64 *cnt,
                                           u64 *bytes, u8 *okeys, u32 *ooffs, u64 *ovals) {
    if (q == Q) {
        if (!write) {
            cnt[Q] = 0;
            bytes[Q] = 0;
        }
        return;
    }
    Range r = range_of(q, lod, loo, hid, hio, hashi);
    u64 j = write ? cnt[q] : 0, o = write ? bytes[q] : 0;
    u64 c = 0, by = 0;
    Cur cur = desc ? seek_lt(t, r.hi, r.hn, r.has) : seek_ge(t, r.lo, r.ln);
    while (limit == 0 || c < limit) {
        u64 l = desc ? cur_prev(t, &cur) : cur_next(t, &cur);
        if (!l) break;
        const u8 *k = leaf_key(t, l);
        u32 kn = laux(l);
        if (!desc && r.has && compare_keys(k, kn, r.hi, r.hn) >= 0) break;
        if (desc && compare_keys(k, kn, r.lo, r.ln) < 0) break;
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

// aq_scan: one thread per query (store.scan): with write 0 it counts the
// query's pairs and key bytes into cnt[q], bytes[q] (and 0 at [Q], for the
// scans); with write 1 it writes them at the scanned offsets.
extern "C" __global__ void aq_scan(const Tree *t, u64 Q, const u8 *lod, const u32 *loo, const u8 *hid, const u32 *hio,
                                   const u8 *hashi, u64 limit, int desc, int write, u64 *cnt, u64 *bytes, u8 *okeys,
                                   u32 *ooffs, u64 *ovals) {
    GRID_STRIDE(q, Q + 1) scan_query(t, Q, q, lod, loo, hid, hio, hashi, limit, desc, write, cnt, bytes, okeys, ooffs, ovals);
}

// aq_scan_perm is aq_scan with thread i taking query perm[i] (thread Q
// the zeros), perm the queries sorted by start (aq_order_keys).
extern "C" __global__ void aq_scan_perm(const Tree *t, u64 Q, const u32 *perm, const u8 *lod, const u32 *loo,
                                        const u8 *hid, const u32 *hio, const u8 *hashi, u64 limit, int desc, int write,
                                        u64 *cnt, u64 *bytes, u8 *okeys, u32 *ooffs, u64 *ovals) {
    GRID_STRIDE(i, Q + 1) {
        scan_query(t, Q, i == Q ? Q : perm[i], lod, loo, hid, hio, hashi, limit, desc, write, cnt, bytes, okeys, ooffs,
                   ovals);
    }
}

// collect_query is query q of aq_collect (q == Q: the zero after the
// slots). It walks as scan_query does, written out in both: a shared
// walk helper changed the compiled default kernels (aq_scan, aq_collect),
// which are kept byte for byte as the GPU suite passed them (checked again
// with NVRTC 11.8, sm_90: a range_next step or a beyond_range bound test
// each changed all four aq_scan/aq_collect kernels; range_of does not).
__device__ __forceinline__ void collect_query(const Tree *t, u64 Q, u64 q, const u8 *lod, const u32 *loo, const u8 *hid,
                                              const u32 *hio, const u8 *hashi, u64 limit, int desc, u64 *slots,
                                              u64 *pres, u64 *lens) {
    if (q == Q) {
        pres[Q * limit] = 0;
        lens[Q * limit] = 0;
        return;
    }
    Range r = range_of(q, lod, loo, hid, hio, hashi);
    u64 c = 0, at = q * limit;
    Cur cur = desc ? seek_lt(t, r.hi, r.hn, r.has) : seek_ge(t, r.lo, r.ln);
    while (c < limit) {
        u64 l = desc ? cur_prev(t, &cur) : cur_next(t, &cur);
        if (!l) break;
        const u8 *k = leaf_key(t, l);
        u32 kn = laux(l);
        if (!desc && r.has && compare_keys(k, kn, r.hi, r.hn) >= 0) break;
        if (desc && compare_keys(k, kn, r.lo, r.ln) < 0) break;
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

// aq_collect: one thread per query, the single walk of a bounded batch of
// queries (limit > 0; store.rangesSlots): query q's pairs' leaves go to
// slots[q*limit + j] in answer order, with pres = 1 and len = the key's
// length; the slots after its last pair get 0, 0, 0; thread Q writes the
// zero after the last slot (S = Q*limit), so that exclusive scans of pres
// and len give every pair's place and key offset and their totals at S.
extern "C" __global__ void aq_collect(const Tree *t, u64 Q, const u8 *lod, const u32 *loo, const u8 *hid, const u32 *hio,
                                      const u8 *hashi, u64 limit, int desc, u64 *slots, u64 *pres, u64 *lens) {
    GRID_STRIDE(q, Q + 1) collect_query(t, Q, q, lod, loo, hid, hio, hashi, limit, desc, slots, pres, lens);
}

// aq_collect_perm is aq_collect with thread i taking query perm[i] (thread
// Q the zero), perm the queries sorted by start (aq_order_keys).
extern "C" __global__ void aq_collect_perm(const Tree *t, u64 Q, const u32 *perm, const u8 *lod, const u32 *loo,
                                           const u8 *hid, const u32 *hio, const u8 *hashi, u64 limit, int desc,
                                           u64 *slots, u64 *pres, u64 *lens) {
    GRID_STRIDE(i, Q + 1) collect_query(t, Q, i == Q ? Q : perm[i], lod, loo, hid, hio, hashi, limit, desc, slots, pres, lens);
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
