// walk.cu: The cooperative walk of bounded ranges and prefix scans:
// aq_walk8, aq_walk16, aq_walk32, a tile of 8, 16 or 32 lanes of a warp
// per query (ranges_gpu.go launches one in place of aq_cands and aq_trim,
// then the scans and aq_pairs as before). Part of the program art.cu (which
// includes every part once); the layout, the descriptor and the shared
// helpers are in art.cuh, the cursor and the seeks in iterate.cu.
//
// aq_cands steps a cursor one position at a time, one thread per query: a
// leaf costs at least one dependent load, a node's children are read one
// after the other, and the threads of a warp (different queries) diverge
// at every node. Here the lanes of a tile take the next TILE positions of
// the node (or of the root array) the cursor is in with one coalesced
// read, a ballot finds the first inner node among them, and every leaf
// before it goes to the query's slots at once; only a descent into an
// inner node or a climb out of an exhausted one is a dependent step. The
// lanes of a tile hold the same cursor and take the same branches; they
// also search a node's key bytes together (tile_lower_pos). The walk
// stops at the query's far bound (each lane comparing its own leaf's
// key), so it also does aq_trim's work: no leaf past the bound is walked
// to, and the counts come out of the walk.
#pragma once
#include "art/art.cuh"
#include "art/iterate.cu"

// Tile is a tile of TILE lanes (8, 16 or 32) of a warp: lane is the
// thread's lane in it, mask the tile's lanes in the warp, base its first.
template <int TILE>
struct Tile {
    u32 lane, base, mask;

    __device__ __forceinline__ Tile() {
        u32 w = threadIdx.x % WARP;
        lane = w % TILE;
        base = w - lane;
        mask = TILE == WARP ? FULL_MASK : ((1u << TILE) - 1) << base;
    }
    // ballot is the tile's predicates, bit i from lane i.
    __device__ __forceinline__ u32 ballot(bool p) const { return (__ballot_sync(mask, p) & mask) >> base; }
    // shfl is v of lane src.
    template <class T>
    __device__ __forceinline__ T shfl(T v, u32 src) const { return __shfl_sync(mask, v, (int)src, TILE); }
    // sum is the sum of v over the tile (every lane gets it).
    template <class T>
    __device__ __forceinline__ T sum(T v) const {
        for (int d = TILE / 2; d > 0; d >>= 1) v += __shfl_xor_sync(mask, v, d, TILE);
        return v;
    }
};

// below is the bits of the lanes below lane i (every bit for i >= 32).
__device__ __forceinline__ u32 below(u32 i) { return i >= 32 ? FULL_MASK : (1u << i) - 1; }

// tile_lower_pos is lower_pos searched by a tile, every lane with the same
// arguments and getting the same answer: an N4's or N16's key bytes one
// a lane and a ballot of those at or above b; an N48's index bytes below
// b counted eight a lane (one 64-bit word each) and summed.
template <int TILE>
struct TileLowerPos {
    Tile<TILE> tl;

    __device__ __forceinline__ int operator()(const u64 *r, u32 k, u32 b, bool *exact) const {
        const u8 *bs = rbytes(r);
        if (k == K_N4 || k == K_N16) {
            u32 off = k == K_N4 ? N4_KEYB : N16_KEYB;
            u32 c = count_of(r);
            for (u32 i0 = 0; i0 < c; i0 += TILE) {
                u32 i = i0 + tl.lane;
                u32 v = i < c ? bs[off + i] : 0;
                u32 ge = tl.ballot(i < c && v >= b);
                if (ge) {
                    u32 f = (u32)__ffs(ge) - 1;
                    *exact = tl.shfl(v, f) == b;
                    return (int)(i0 + f);
                }
            }
            *exact = false;
            return (int)c;
        }
        if (k == K_N48) {
            const u8 *idx = bs + N48_INDEXB;
            if (idx[b]) {
                *exact = true;
                return idx[b] - 1;
            }
            u32 p = 0;
            for (u32 c0 = 0; c0 < b; c0 += 8 * TILE) {
                u32 c = c0 + 8 * tl.lane;
                u32 m = 0;
                if (c < b) {
                    u64 x = r[(N48_INDEXB + c) / 8];
                    for (u32 j = 0; j < 8 && c + j < b; j++) m += ((x >> (8 * j)) & 0xff) != 0;
                }
                p += tl.sum(m);
            }
            *exact = false;
            return (int)p;
        }
        *exact = r[N256_CHILD + b] != 0;
        return (int)b;
    }
};

// tile_climb is store.climb for a tile's cursor: the position after
// (DESC: before) node r's place in its parent, or in the root array. The
// cursor's depth d is not kept (the walk does not use it).
template <int TILE, bool DESC>
__device__ __forceinline__ void tile_climb(const Tree *t, const Tile<TILE> &tl, Cur *c, const u64 *r) {
    u64 pw = r[W_PARENT];
    long step = DESC ? -1 : 1;
    if (lkind(pw) == K_ROOT) {
        c->node = ROOT_CUR;
        c->pos = root_pos_of(t, lidx(pw)) + step;
        return;
    }
    u64 p = node_id(pw);
    bool ex;
    c->node = p;
    c->pos = TileLowerPos<TILE>{tl}(rec(t, p), lkind(p), laux(pw), &ex) + step;
}

// node_capacity is the child words of a node of kind k (layout.go's
// capacity): reading a position below it stays within the record.
__device__ __forceinline__ u32 node_capacity(u32 k) { return k == K_N4 ? CAP_N4 : k == K_N16 ? CAP_N16 : k == K_N48 ? CAP_N48 : CAP_N256; }

// Far is a walk's far bound: ascending the query's upper bound (keys
// below it are in), descending its lower bound (keys at or above it);
// bounded false: every key is in.
struct Far {
    const u8 *b;
    u32 n;
    bool bounded;
};

// Walked is what a tile's walk found: the leaves it kept and the sum of
// their key lengths and of their squares (aq_trim's cnt, bytes and sq).
struct Walked {
    u64 c, bytes, sq;
};

// tile_walk steps a tile's cursor from cur, as cur_step would (DESC:
// cur_prev, else cur_next), writing up to limit leaves within the far
// bound to out in answer order. Each turn the lanes read the TILE
// positions from cur.pos on (DESC: down from it) of the root array or of
// the node the cursor is in, lane i position pos+i (pos-i): the leaves
// before the first inner node among them are the next answers (a ballot
// ranks them), each lane compares its own leaf's key with the far bound
// (when the query has one), and a second ballot keeps those before the
// first one past it; the cursor then descends into the inner node, or
// moves TILE positions on, or climbs out of the exhausted node, or the
// walk ends at the bound. Key lengths come from the leaf links. Invariant:
// out[0..c) are the first c leaves from the start in cursor order, all
// within the bound; every lane of the tile holds the same cursor and c,
// and no position is skipped (a turn takes only the positions before its
// first inner node). Cost: a dependent load per node entered, per TILE
// positions read and per climb, instead of one per position; with a far
// bound, one leaf key read (the lanes' leaves in parallel) per turn.
template <int TILE, bool DESC>
__device__ Walked tile_walk(const Tree *t, const Tile<TILE> &tl, Cur cur, u64 limit, Far far, u64 *out) {
    u64 c = 0, by = 0, sq = 0; // by and sq: this lane's leaves
    while (c < limit) {
        bool root = cur.node == ROOT_CUR;
        const u64 *r = root ? nullptr : rec(t, cur.node);
        u32 k = lkind(cur.node);
        long first = root ? 0 : -1;
        long last = root ? root_positions(t) - 1 : (long)positions(r, k) - 1;
        if (DESC ? cur.pos < first : cur.pos > last) {
            if (root) break;
            tile_climb<TILE, DESC>(t, tl, &cur, r);
            continue;
        }
        long p = DESC ? cur.pos - (long)tl.lane : cur.pos + (long)tl.lane;
        u64 l = 0;
        if (root) {
            if (DESC ? p >= first : p <= last) l = root_pos_link(t, p);
        } else if (p >= -1 && p < (long)node_capacity(k)) {
            // Read within the record before the count is known (the two
            // loads in flight together), then drop the positions past it.
            l = child_at(r, k, (int)p);
            if (p > last) l = 0;
        }
        bool leaf = l && is_leaf(l);
        u32 inner = tl.ballot(l && !leaf);
        u32 f = inner ? (u32)__ffs(inner) - 1 : TILE; // the lanes before the first inner node
        u32 leaves = tl.ballot(leaf) & below(f);
        u64 at = c + __popc(leaves & below(tl.lane));
        bool take = leaf && tl.lane < f && at < limit;
        bool past = false;
        if (take && far.bounded) {
            int cmp = compare_keys(leaf_key(t, l), laux(l), far.b, far.n);
            past = DESC ? cmp < 0 : cmp >= 0;
        }
        u32 pasts = tl.ballot(past); // keys are in order: every taken leaf after the first past one is past too
        take = take && !past;
        if (take) {
            out[at] = l;
            u64 kn = laux(l);
            by += kn;
            sq += kn * kn;
        }
        c += __popc(tl.ballot(take));
        if (pasts) break;
        if (inner) {
            u64 ch = tl.shfl(l, f);
            cur.node = ch;
            cur.pos = DESC ? (long)positions(rec(t, ch), lkind(ch)) - 1 : -1;
        } else {
            cur.pos += DESC ? -(long)TILE : (long)TILE;
        }
    }
    return Walked{c, tl.sum(by), tl.sum(sq)};
}

// walk_tiles: a tile of TILE lanes per walk i < Q, taking query q =
// perm[i] (perm the queries sorted by start key) or q = i (perm null): the
// tile seeks the query's start together (seek with tile_lower_pos: seek_ge
// of lo ascending, seek_lt of hi descending) and walks from it to the far
// bound or the limit (tile_walk), writing slots[q*limit ..] and the
// query's pair count cnt[q], key bytes bytes[q] and sum of squared key
// lengths sq[q]; walk 0 also zeroes entry Q of the three (for their
// scans). Invariant: those of aq_cands and aq_trim together, which it
// replaces (slots[q*limit .. q*limit+cnt[q]) are exactly the query's
// answer in answer order; every count has one writer).
template <int TILE>
__device__ __forceinline__ void walk_tiles(const Tree *t, u64 Q, const u32 *perm, const u8 *lod, const u32 *loo,
                                           const u8 *hid, const u32 *hio, const u8 *hashi, u64 limit, int desc,
                                           u64 *slots, u64 *cnt, u64 *bytes, u64 *sq) {
    Tile<TILE> tl;
    u64 tiles = (u64)gridDim.x * blockDim.x / TILE;
    for (u64 i = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / TILE; i < Q; i += tiles) {
        u64 q = perm ? (u64)perm[i] : i;
        u64 *out = slots + q * limit;
        TileLowerPos<TILE> lp{tl};
        const u8 *lo = lod + loo[q], *hi = hid + hio[q];
        u32 lon = loo[q + 1] - loo[q], hin = hio[q + 1] - hio[q];
        Walked w = desc ? tile_walk<TILE, true>(t, tl, seek<true>(t, hi, hin, hashi[q], lp), limit, Far{lo, lon, lon > 0}, out)
                        : tile_walk<TILE, false>(t, tl, seek<false>(t, lo, lon, true, lp), limit, Far{hi, hin, hashi[q] != 0}, out);
        if (tl.lane == 0) {
            cnt[q] = w.c;
            bytes[q] = w.bytes;
            sq[q] = w.sq;
            if (i == 0) cnt[Q] = bytes[Q] = sq[Q] = 0;
        }
    }
}

// aq_walk8, aq_walk16, aq_walk32: walk_tiles with tiles of 8, 16 and 32
// lanes, launched with TILE threads per query.
extern "C" __global__ void aq_walk8(const Tree *t, u64 Q, const u32 *perm, const u8 *lod, const u32 *loo, const u8 *hid,
                                    const u32 *hio, const u8 *hashi, u64 limit, int desc, u64 *slots, u64 *cnt, u64 *bytes, u64 *sq) {
    walk_tiles<8>(t, Q, perm, lod, loo, hid, hio, hashi, limit, desc, slots, cnt, bytes, sq);
}
extern "C" __global__ void aq_walk16(const Tree *t, u64 Q, const u32 *perm, const u8 *lod, const u32 *loo, const u8 *hid,
                                     const u32 *hio, const u8 *hashi, u64 limit, int desc, u64 *slots, u64 *cnt, u64 *bytes, u64 *sq) {
    walk_tiles<16>(t, Q, perm, lod, loo, hid, hio, hashi, limit, desc, slots, cnt, bytes, sq);
}
extern "C" __global__ void aq_walk32(const Tree *t, u64 Q, const u32 *perm, const u8 *lod, const u32 *loo, const u8 *hid,
                                     const u32 *hio, const u8 *hashi, u64 limit, int desc, u64 *slots, u64 *cnt, u64 *bytes, u64 *sq) {
    walk_tiles<32>(t, Q, perm, lod, loo, hid, hio, hashi, limit, desc, slots, cnt, bytes, sq);
}
