// Shared device code of the CUBPT kernels (btree.cu and the files it
// includes: ranges.cu, locate.cu, insert.cu, delete.cu, propagate.cu).
//
// The tree is the CPU engine's node array, flat in device memory: node id
// owns keys[id*ORDER .. id*ORDER+ORDER) and slots[...] (values in a leaf,
// child ids in an internal node) and element id of count, parent, next,
// prev (u32) and kind (u8). ORDER is passed at run time (order), so one
// cubin serves every order. Indices into keys and slots are 64-bit.
//
// Constants of the node layout, passed from btree_gpu.go with -D options: NIL
// (nilNode: no node), KIND_FREE, KIND_LEAF, KIND_INTERNAL (the node kinds)
// and FREED_SHIFT (freedShift: the bit where a level's freed count starts
// above its entry offsets in the packed sizes).
#pragma once

#include "warpkv/types.cuh"

#if !defined(NIL) || !defined(KIND_FREE) || !defined(KIND_LEAF) || !defined(KIND_INTERNAL) || !defined(FREED_SHIFT)
#error "NIL, KIND_FREE, KIND_LEAF, KIND_INTERNAL and FREED_SHIFT are passed from btree_gpu.go"
#endif

// part_of32 is part_of for n < 2^32: 32-bit divisions, a fraction of the
// 64-bit ones' instructions. One part (a node that does not split, the
// common case of an insert's leaves) takes no division.
__device__ __forceinline__ void part_of32(u32 i, u32 n, u32 p, u32 *q, u32 *slot, u32 *size) {
    if (p == 1) {
        *q = 0;
        *slot = i;
        *size = n;
        return;
    }
    u32 base = n / p, rem = n % p;
    u32 big = rem * (base + 1);
    if (i < big) {
        u32 qq = i / (base + 1);
        *q = qq;
        *slot = i - qq * (base + 1);
        *size = base + 1;
    } else {
        u32 r = (i - big) / base;
        *q = rem + r;
        *slot = (i - big) - r * base;
        *size = base;
    }
}

// part_of inverts the CPU engine's share(): n items split into p parts as
// evenly as possible, the first n%p parts one larger. Item i lies in part
// *q at slot *slot; *size is that part's size. Needs 1 <= p <= n.
__device__ __forceinline__ void part_of(u64 i, u64 n, u64 p, u64 *q, u64 *slot, u64 *size) {
    if (n <= 0xffffffffull) {
        u32 q32, s32, z32;
        part_of32((u32)i, (u32)n, (u32)p, &q32, &s32, &z32);
        *q = q32;
        *slot = s32;
        *size = z32;
        return;
    }
    u64 base = n / p, rem = n % p;
    u64 big = rem * (base + 1);
    if (i < big) {
        *q = i / (base + 1);
        *slot = i - *q * (base + 1);
        *size = base + 1;
    } else {
        u64 r = (i - big) / base;
        *q = rem + r;
        *slot = (i - big) - r * base;
        *size = base;
    }
}

// Place is where part_of puts an item of a level whose nodes are
// first..first+p-1 (bt_leaves, bt_level, bt_level_list): part q, slot s,
// the part's size, its node id and the word at of slot s in keys and slots.
struct Place {
    u64 q, s, size;
    u32 id;
    u64 at;
};

// place_of is item i's Place among n items in p nodes from first, order
// entries a node. Needs 1 <= p <= n.
__device__ __forceinline__ Place place_of(u64 i, u64 n, u64 p, u32 first, u32 order) {
    Place e;
    part_of(i, n, p, &e.q, &e.s, &e.size);
    e.id = first + (u32)e.q;
    e.at = (u64)e.id * order + e.s;
    return e;
}

// put_head writes node id's entry count and kind: what the thread of a
// node's slot 0 writes in every kernel that builds or rewrites nodes
// (bt_leaves, bt_level, bt_write_leaves, bt_write_internal, bt_level_list);
// each then sets the links its kernel owns.
__device__ __forceinline__ void put_head(u32 *count, u8 *kind, u32 id, u64 size, u8 k) {
    count[id] = (u32)size;
    kind[id] = k;
}

// lower_bound returns the first j < c with k[j] >= key, or c.
__device__ __forceinline__ u32 lower_bound(const u64 *k, u32 c, u64 key) {
    u32 lo = 0, hi = c;
    while (lo < hi) {
        u32 mid = (lo + hi) >> 1;
        if (k[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// find_leaf descends from root through height-1 internal levels: at each
// the first child whose max key is >= key, or the last child (right spine).
__device__ __forceinline__ u32 find_leaf(u64 key, u32 root, u32 height, u32 order,
                                         const u64 *keys, const u64 *slots, const u32 *count) {
    u32 node = root;
    for (u32 h = 1; h < height; h++) {
        u64 base = (u64)node * order;
        u32 c = count[node];
        u32 j = lower_bound(keys + base, c, key);
        if (j == c) j = c - 1;
        node = (u32)slots[base + j];
    }
    return node;
}

// seek finds key's lower bound in the tree: it returns key's leaf
// (find_leaf) and sets *base to the leaf's first slot (leaf * order), *c
// to its count and *j to the first of its keys >= key (c when none): the
// search bt_get and bt_locate begin with (the range kernels' range_seek,
// in ranges.cu, is its form for either direction).
__device__ __forceinline__ u32 seek(u64 key, u32 root, u32 height, u32 order, const u64 *keys, const u64 *slots,
                                    const u32 *count, u64 *base, u32 *c, u32 *j) {
    u32 leaf = find_leaf(key, root, height, order, keys, slots, count);
    *base = (u64)leaf * order;
    *c = count[leaf];
    *j = lower_bound(keys + *base, *c, key);
    return leaf;
}

// ---------------------------------------------------------------------------
// Batch insert and delete (insert_gpu.go, delete_gpu.go and
// propagate_gpu.go launch them). Words named
// "packed" hold two 32-bit counts, hi<<32 | lo, so that one 64-bit scan or
// reduction carries both (neither sum reaches 2^32). A "group" is one
// touched node of the level being rewritten, in key order; per-group arrays
// of G+1 elements are exclusive scans whose element G is the total.

#define HI(x) ((u32)((x) >> 32))
#define LO(x) ((u32)(x))

// pieces mirrors the CPU engine's pieces(): how many nodes c entries are
// split into (0 for none, 1 when they fit in order, else ceil(c/fill)).
__device__ __forceinline__ u64 pieces(u64 c, u32 order, u32 fill) {
    if (c == 0) return 0;
    if (c <= order) return 1;
    return (c + fill - 1) / fill;
}

// size_touched writes the sizing of touched node `node` (group g), the
// same at the leaf level and every parent level: its new entry count c
// (with flags, e.g. FREED) to gc[g], its pieces and the extra nodes they
// need (hi: pieces, lo: pieces - 1 when above 1) to gp[g], and its old max
// key (of c0 old entries) to oldMax[g].
__device__ __forceinline__ void size_touched(u64 g, u32 node, u64 c0, u64 c, u64 flags, u32 order, u32 fill,
                                             const u64 *keys, u64 *gc, u64 *gp, u64 *oldMax) {
    u64 p = pieces(c, order, fill);
    gc[g] = c | flags;
    gp[g] = (p << 32) | (p > 1 ? p - 1 : 0);
    oldMax[g] = keys[(u64)node * order + c0 - 1];
}

// for_touched is the loop of the sizing kernels at every level: size(g)
// for each touched group g < G (grid-stride over g <= bound), while the
// threads of g in [G, bound] zero those elements of the sizing's arrays
// (sum, gc, gp), so that exclusive scans over bound + 1 elements hold
// the totals at G and at bound. bound (known to the host) is at least G,
// which may be counted on the device, so the host need not read it first.
template <class Size>
__device__ __forceinline__ void for_touched(u64 bound, u64 G, u64 *sum, u64 *gc, u64 *gp, Size size) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g <= bound; g += (u64)gridDim.x * blockDim.x) {
        if (g >= G) {
            sum[g] = 0;
            gc[g] = 0;
            gp[g] = 0;
            continue;
        }
        size(g);
    }
}

// Level headers: the counts of one level's changes that the parent-level
// kernels read from device memory instead of taking them from the host
// (propagate_gpu.go keeps one header of HDR_WORDS words per level, the
// leaf level's first, after the CTL_WORDS words of the batch's control
// block). HDR_G: touched nodes; HDR_R: their replacements (pieces);
// HDR_E: staged entries of the touched parents; HDR_OLD: their old
// entries; HDR_FIRST, HDR_EXTRA: the level's new nodes.
#define HDR_G 0
#define HDR_R 1
#define HDR_E 2
#define HDR_OLD 3
#define HDR_FIRST 4
#define HDR_EXTRA 5
#define HDR_WORDS 8

// The control block: CTL_NODES the nodes in use (the next new node),
// CTL_FREED the parents freed so far, CTL_OVER nonzero when a level needed
// more nodes or replacements than reserved, CTL_CAP the node capacity,
// CTL_RCAP the replacements a level's buffers hold.
#define CTL_NODES 0
#define CTL_FREED 1
#define CTL_OVER 2
#define CTL_CAP 3
#define CTL_RCAP 4
#define CTL_WORDS 8

// last_le returns the largest g < n with off(g) <= r for a nondecreasing
// off with off(0) <= r; off is given by the functor-free form below.
__device__ __forceinline__ u64 last_le_u64(const u64 *off, u64 n, u64 r, u64 mask) {
    u64 lo = 0, hi = n; // answer in [lo, hi)
    while (hi - lo > 1) {
        u64 mid = (lo + hi) >> 1;
        if ((off[mid] & mask) <= r) lo = mid; else hi = mid;
    }
    return lo;
}

// last_le_hi is last_le_u64 over the high halves of packed words.
__device__ __forceinline__ u64 last_le_hi(const u64 *off, u64 n, u64 r) {
    u64 lo = 0, hi = n;
    while (hi - lo > 1) {
        u64 mid = (lo + hi) >> 1;
        if (HI(off[mid]) <= r) lo = mid; else hi = mid;
    }
    return lo;
}

#define ALL64 0xffffffffffffffffull

// Block-cooperative group search (merge-path style). The flattened-entry
// kernels below map item r to its group g, the largest g < G with
// off(g) <= r for a nondecreasing off. Instead of a binary search over all
// G groups per thread, threads 0 and 1 of a block search the groups of
// the block's first and last item once; every thread then searches only
// that bracket (a few groups: a leaf's entries fill tens of items). The
// tile loop runs the same trip count in every thread of a block, so the
// barriers are uniform; blocks have at least two threads.
#define TILE_LOOP(total) \
    for (u64 tile = blockIdx.x * (u64)blockDim.x; tile < (total); tile += (u64)gridDim.x * blockDim.x)

// off_le is the comparison of the searches: off(g) <= r, where off(g) is
// (off[g] & mask), or with sub != 0 the "old entry" offset of a touched
// leaf, gc[g] - LO(gSum[g]) (insert) or gc[g] + LO(gSum[g]) (delete).
struct GroupOff {
    const u64 *off;
    u64 mask;
    const u64 *gSum; // nullptr: off & mask
    int del;
    __device__ __forceinline__ u64 at(u64 g) const {
        if (gSum == nullptr) return off[g] & mask;
        return del ? off[g] + LO(gSum[g]) : off[g] - LO(gSum[g]);
    }
};

// group_in returns the largest g in [lo, hi) with o.at(g) <= r; needs
// o.at(lo) <= r.
__device__ __forceinline__ u64 group_in(const GroupOff &o, u64 lo, u64 hi, u64 r) {
    while (hi - lo > 1) {
        u64 mid = (lo + hi) >> 1;
        if (o.at(mid) <= r) lo = mid; else hi = mid;
    }
    return lo;
}

// block_groups brackets the groups of the tile's items [tile, min(tile +
// blockDim, total)) in bracket[0..1] (shared), then returns item r's group
// (r = tile + threadIdx.x; any value when r >= total). Every thread of the
// block must call it.
__device__ __forceinline__ u64 block_groups(const GroupOff &o, u64 G, u64 tile, u64 total, u64 *bracket) {
    __syncthreads(); // the previous tile's readers are done with bracket
    if (threadIdx.x == 0) bracket[0] = group_in(o, 0, G, tile);
    if (threadIdx.x == 1) bracket[1] = group_in(o, 0, G, min(tile + blockDim.x, total) - 1);
    __syncthreads();
    u64 r = tile + threadIdx.x;
    if (r >= total) return 0;
    return group_in(o, bracket[0], bracket[1] + 1, r);
}


#define OFF40 ((1ull << FREED_SHIFT) - 1) // entry offsets below bit 40, freed counts above

// piece_id mirrors the CPU engine's pieceID(): piece 0 is the node itself,
// piece q > 0 the new node first + extraOff + q - 1.
__device__ __forceinline__ u32 piece_id(u32 node, u32 first, u32 extraOff, u64 q) {
    return q == 0 ? node : first + extraOff + (u32)(q - 1);
}
