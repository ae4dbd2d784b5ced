// CUBPT kernels: the GPU engine of package btree (the *_gpu.go files
// launch them; btree_gpu.go loads them).
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
// search bt_get, bt_locate and bt_range begin with (bt_range_start writes
// it out).
__device__ __forceinline__ u32 seek(u64 key, u32 root, u32 height, u32 order, const u64 *keys, const u64 *slots,
                                    const u32 *count, u64 *base, u32 *c, u32 *j) {
    u32 leaf = find_leaf(key, root, height, order, keys, slots, count);
    *base = (u64)leaf * order;
    *c = count[leaf];
    *j = lower_bound(keys + *base, *c, key);
    return leaf;
}

// bt_last_flags: one thread per sorted key (grid-stride). flags[i] = 1 when
// keys[i] is the last of its run of equal keys (the batch's last
// occurrence after a stable sort), else 0.
extern "C" __global__ void bt_last_flags(const u64 *keys, u64 n, u8 *flags) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        flags[i] = (i + 1 == n || keys[i + 1] != keys[i]) ? 1 : 0;
    }
}

// bt_iota: one thread per batch position i < n (grid-stride): idx[i] = i,
// the payload of a key sort whose values are gathered afterwards
// (bt_gather_selected), so that the values' upload overlaps the sort.
extern "C" __global__ void bt_iota(u64 n, u32 *idx) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        idx[i] = (u32)i;
    }
}

// bt_gather_selected: one thread per output i < min(n, *count) (grid-
// stride; count is the device-side total of a select, so no host read is
// needed before the launch): out[i] = v[sel[i]], the value of the batch
// position that the sort and the dedupe kept at rank i.
extern "C" __global__ void bt_gather_selected(u64 n, const u32 *count, const u32 *sel, const u64 *v, u64 *out) {
    u64 m = min(n, (u64)*count);
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x) {
        out[i] = v[sel[i]];
    }
}

// bt_scatter_values: one thread per kept batch key i < m (grid-stride):
// slots[at[i]] = v[sel[i]], the value of the batch position that the sort
// and the dedupe kept at rank i, into the leaf slot where
// bt_merge_leaves_E put its key (at: the word indices it recorded). Every
// at[i] is distinct, so every word has one writer.
extern "C" __global__ void bt_scatter_values(u64 m, const u64 *at, const u32 *sel, const u64 *v, u64 *slots) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x) {
        slots[at[i]] = v[sel[i]];
    }
}

// bt_leaves: one thread per key of the strictly increasing k[0:n) (grid-
// stride). Key i goes to leaf first+q at slot s, (q, s) = part_of(i, n, L):
// the closed form of the CPU engine's buildSorted. The thread of slot 0
// also writes the leaf's count, kind, parent (nil; the level above sets
// it) and leaf chain. The node arrays must be zero beforehand.
extern "C" __global__ void bt_leaves(const u64 *k, const u64 *v, u64 n, u64 L, u32 order, u32 first,
                                     u64 *keys, u64 *slots, u32 *count, u32 *parent, u32 *next, u32 *prev,
                                     u8 *kind) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        Place e = place_of(i, n, L, first, order);
        keys[e.at] = k[i];
        slots[e.at] = v[i];
        if (e.s == 0) {
            put_head(count, kind, e.id, e.size, KIND_LEAF);
            parent[e.id] = NIL;
            prev[e.id] = e.q == 0 ? NIL : e.id - 1;
            next[e.id] = e.q + 1 == L ? NIL : e.id + 1;
        }
    }
}

// bt_level: one thread per child (grid-stride) of a level of n nodes with
// ids childFirst..childFirst+n-1 in key order, building the p nodes above
// (ids first..first+p-1) with the same closed form: the child's max key
// and id go to slot s of parent first+q, and the child's parent is set.
// The thread of slot 0 writes the parent's count, kind and a nil parent.
extern "C" __global__ void bt_level(u64 n, u64 p, u32 childFirst, u32 first, u32 order,
                                    u64 *keys, u64 *slots, u32 *count, u32 *parent, u8 *kind) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        Place e = place_of(i, n, p, first, order);
        u32 child = childFirst + (u32)i;
        keys[e.at] = keys[(u64)child * order + count[child] - 1];
        slots[e.at] = child;
        parent[child] = e.id;
        if (e.s == 0) {
            put_head(count, kind, e.id, e.size, KIND_INTERNAL);
            parent[e.id] = NIL;
        }
    }
}

// bt_get: one thread per query key (grid-stride): descend from the root,
// lower bound in the leaf; out[i] = value and found[i] = 1 on a hit, else
// 0 and 0. The tree must not be empty.
extern "C" __global__ void bt_get(const u64 *q, u64 n, u32 root, u32 height, u32 order,
                                  const u64 *keys, const u64 *slots, const u32 *count,
                                  u64 *out, u8 *found) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 key = q[i], base;
        u32 c, j;
        seek(key, root, height, order, keys, slots, count, &base, &c, &j);
        bool hit = j < c && keys[base + j] == key;
        out[i] = hit ? slots[base + j] : 0;
        found[i] = hit ? 1 : 0;
    }
}

// Range queries: ranges.cu (it uses lower_bound, find_leaf and seek above).
#include "btree/ranges.cu"

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
// for each touched group g < G (grid-stride over g <= G), while the thread
// of g == G zeroes element G of the sizing's arrays (sum, gc, gp), the
// totals slot of their exclusive scans.
template <class Size>
__device__ __forceinline__ void for_touched(u64 G, u64 *sum, u64 *gc, u64 *gp, Size size) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g <= G; g += (u64)gridDim.x * blockDim.x) {
        if (g == G) {
            sum[G] = 0;
            gc[G] = 0;
            gp[G] = 0;
            continue;
        }
        size(g);
    }
}

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

// bt_locate: one thread per key of the strictly increasing batch k[0:m)
// (grid-stride). leafOf[i] = the key's leaf (find_leaf), pos[i] = the
// number of the leaf's keys below it, packed[i] = 1<<32 | flag where flag
// is "in the leaf" (del != 0) or "not in the leaf" (insert). Thread 0 also
// zeroes packed[m], so that packed scans over m+1 elements.
extern "C" __global__ void bt_locate(const u64 *k, u64 m, u32 root, u32 height, u32 order, int del,
                                     const u64 *keys, const u64 *slots, const u32 *count,
                                     u32 *leafOf, u32 *pos, u64 *packed) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x) {
        if (i == 0) packed[m] = 0;
        u64 key = k[i], base;
        u32 c, j;
        u32 leaf = seek(key, root, height, order, keys, slots, count, &base, &c, &j);
        bool hit = j < c && keys[base + j] == key;
        leafOf[i] = leaf;
        pos[i] = j;
        packed[i] = (1ull << 32) | (u64)((del != 0) == hit ? 1 : 0);
    }
}

// bt_leaf_sizes: one thread per touched leaf g <= G (grid-stride); gLeaf,
// gSum are the reduction by leaf of bt_locate's output (hi: batch keys of
// the leaf, lo: flagged keys). Writes the leaf's new entry count c (insert:
// old + new keys; delete: old - found) to gc[g], its pieces and extra new
// nodes (hi: pieces, lo: pieces - 1 when above 1) to gp[g], its old max key
// and old next leaf; thread G zeroes gSum[G], gc[G], gp[G] for the scans.
extern "C" __global__ void bt_leaf_sizes(u64 G, const u32 *gLeaf, u64 *gSum, u32 order, u32 fill, int del,
                                         const u64 *keys, const u32 *count, const u32 *next,
                                         u64 *gc, u64 *gp, u64 *oldMax, u32 *oldNext) {
    for_touched(G, gSum, gc, gp, [&](u64 g) {
        u32 leaf = gLeaf[g];
        u64 c0 = count[leaf];
        u64 f = LO(gSum[g]);
        size_touched(g, leaf, c0, del ? c0 - f : c0 + f, 0, order, fill, keys, gc, gp, oldMax);
        oldNext[g] = next[leaf];
    });
}

// bt_max_hi: a grid-stride loop over g < G (a small grid: the launcher
// caps it) keeps each thread's largest HI(sum[g]); the warp's largest
// (shuffles over the full warp, after the loop every lane takes part in)
// goes to *out with one atomicMax per warp. *out must be zero (or a lower
// bound) beforehand. Over the unscanned reduction by leaf, it is the most
// batch keys of one touched leaf (insert_gpu.go picks bt_merge_leaves by
// it). One atomic per warp, not per group: a million atomics on one word
// serialize for milliseconds.
extern "C" __global__ void bt_max_hi(u64 G, const u64 *sum, u64 *out) {
    u32 m = 0;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        u32 h = HI(sum[g]);
        m = h > m ? h : m;
    }
    for (int d = WARP / 2; d > 0; d >>= 1) {
        u32 x = __shfl_xor_sync(FULL_MASK, m, d);
        m = x > m ? x : m;
    }
    if ((threadIdx.x & (WARP - 1)) == 0 && m > 0) atomicMax(out, (u64)m);
}

// bt_merge_new: one thread per batch key i < m (grid-stride), insert only.
// Key i of group g (found by its batch start, the hi half of the scanned
// gSum) goes to merged position pos[i] (old keys below it) + the batch's
// new keys below it in the leaf (lo halves of the scanned packed and gSum)
// within the group's merged run at gc[g] (scanned merged sizes).
extern "C" __global__ void bt_merge_new(const u64 *k, const u64 *v, u64 m, u64 G, const u64 *gSum,
                                        const u64 *packed, const u32 *pos, const u64 *gc, u64 *mk, u64 *mv) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x) {
        u64 g = last_le_hi(gSum, G, i);
        u64 r = pos[i] + (LO(packed[i]) - LO(gSum[g]));
        mk[gc[g] + r] = k[i];
        mv[gc[g] + r] = v[i];
    }
}

// bt_stage_old: one thread per old entry e < nOld of the touched leaves,
// flattened in group order (grid-stride tiles of a block, the group found
// by block_groups). The group's old entries start at
// gc[g] + sign * lo(gSum[g]) (insert: the merged offset minus the new keys
// before it; delete: the kept offset plus the found keys before it). The
// entry is dropped when the batch holds its key (insert: the new value
// wins; delete: removed); else it goes to out at gc[g] + its index +
// (insert) the new batch keys below it or - (delete) the found ones. Old
// entries beyond the count are never read, so stale words stay as in the
// CPU engine.
extern "C" __global__ void bt_stage_old(u64 nOld, u64 G, int del, const u64 *k, const u64 *gSum,
                                        const u64 *packed, const u64 *gc, const u32 *gLeaf, u32 order,
                                        const u64 *keys, const u64 *slots, u64 *ok, u64 *ov) {
    __shared__ u64 bracket[2];
    GroupOff o = {gc, ALL64, gSum, del};
    TILE_LOOP(nOld) {
        // Largest g with oldOff(g) <= e; oldOff strictly increases (every
        // touched leaf has an old entry).
        u64 g = block_groups(o, G, tile, nOld, bracket);
        u64 e = tile + threadIdx.x;
        if (e >= nOld) continue;
        u64 oldOff = o.at(g);
        u64 j = e - oldOff;
        u64 at = (u64)gLeaf[g] * order + j;
        u64 key = keys[at];
        u64 ks = HI(gSum[g]), ke = HI(gSum[g + 1]);
        u64 a = ks, b = ke; // first batch key >= key
        while (a < b) {
            u64 mid = (a + b) >> 1;
            if (k[mid] < key) a = mid + 1; else b = mid;
        }
        if (a < ke && k[a] == key) continue;
        u64 below = LO(packed[a]) - LO(gSum[g]);
        u64 r = del ? j - below : j + below;
        ok[gc[g] + r] = key;
        ov[gc[g] + r] = slots[at];
    }
}

// bt_write_leaves: one thread per merged entry r < total (grid-stride
// tiles, the group found by block_groups), insert only. Entry r of group
// g (largest g with gc[g] <= r) is item
// r - gc[g] of the group's c entries split into p pieces (the CPU
// engine's share()); it goes to its piece's slot. The thread of a piece's
// slot 0 writes the piece's count, kind, links (piece 0 keeps the leaf's
// parent and prev; the last piece takes the leaf's old next and, when the
// leaf split, becomes that leaf's prev); the thread of its last slot
// records the piece's id and max key in chId, chMax at the piece's place
// (hi of gp[g] + q). Every word has one writer.
extern "C" __global__ void bt_write_leaves(u64 total, u64 G, const u64 *gc, const u64 *gp, const u32 *gLeaf,
                                           const u32 *oldNext, const u64 *mk, const u64 *mv, u32 first,
                                           u32 order, u64 *keys, u64 *slots, u32 *count, u32 *parent,
                                           u32 *next, u32 *prev, u8 *kind, u32 *chId, u64 *chMax) {
    __shared__ u64 bracket[2];
    TILE_LOOP(total) {
        u64 g = block_groups(GroupOff{gc, ALL64, nullptr, 0}, G, tile, total, bracket);
        u64 r = tile + threadIdx.x;
        if (r >= total) continue;
        u64 c = gc[g + 1] - gc[g];
        u64 p = HI(gp[g + 1]) - HI(gp[g]);
        u64 q, s, size;
        part_of(r - gc[g], c, p, &q, &s, &size);
        u32 leaf = gLeaf[g];
        u32 xo = LO(gp[g]);
        u32 id = piece_id(leaf, first, xo, q);
        u64 at = (u64)id * order + s;
        keys[at] = mk[r];
        slots[at] = mv[r];
        if (s == 0) {
            put_head(count, kind, id, size, KIND_LEAF);
            if (q > 0) {
                parent[id] = parent[leaf];
                prev[id] = piece_id(leaf, first, xo, q - 1);
            }
            if (q + 1 < p) {
                next[id] = piece_id(leaf, first, xo, q + 1);
            } else {
                next[id] = oldNext[g];
                if (p > 1 && oldNext[g] != NIL) prev[oldNext[g]] = id;
            }
        }
        if (s + 1 == size) {
            chId[HI(gp[g]) + q] = id;
            chMax[HI(gp[g]) + q] = mk[r];
        }
    }
}

// MERGE_LANE_ENTRIES is the most old entries a lane of the bt_merge_leaves_*
// kernels holds in registers: they take trees of order up to 32 * it
// (mergeWarpMaxOrder in insert_gpu.go).
#define MERGE_LANE_ENTRIES 8

// merge_put writes merged entry r (key, and value unless noVal) of touched
// leaf g, whose c merged entries are split into p pieces (the CPU engine's
// share()), as bt_write_leaves does: the entry goes to its piece's slot;
// the lane that writes a piece's slot 0 writes its head and links, the one
// that writes its last slot records the piece's id and max key at its
// place rb + q. It returns the entry's word index in keys and slots.
// Sizes are 32-bit: a leaf's merged entries are at most order + 2048
// (mergeWarpMaxKeys), and places fit as the scans' halves do.
__device__ __forceinline__ u64 merge_put(u32 r, u64 key, u64 val, bool noVal, u32 c, u32 p, u32 leaf, u32 first,
                                         u32 xo, u32 rb, u32 up, u32 onext, u32 order, u64 *keys, u64 *slots,
                                         u32 *count, u32 *parent, u32 *next, u32 *prev, u8 *kind, u32 *chId,
                                         u64 *chMax) {
    u32 q, s, size;
    part_of32(r, c, p, &q, &s, &size);
    u32 id = piece_id(leaf, first, xo, q);
    u64 at = (u64)id * order + s;
    keys[at] = key;
    if (!noVal) slots[at] = val;
    if (s == 0) {
        put_head(count, kind, id, size, KIND_LEAF);
        if (q > 0) {
            parent[id] = up;
            prev[id] = piece_id(leaf, first, xo, q - 1);
        }
        if (q + 1 < p) {
            next[id] = piece_id(leaf, first, xo, q + 1);
        } else {
            next[id] = onext;
            if (p > 1 && onext != NIL) prev[onext] = id;
        }
    }
    if (s + 1 == size) {
        chId[(u64)rb + q] = id;
        chMax[(u64)rb + q] = key;
    }
    return at;
}

// merge_leaves is the body of bt_merge_leaves_E (E = 1, 2, 4, 8): one warp
// per touched leaf g < G (grid-stride over warps), insert only, for trees
// of order <= 32 * E: the work of bt_merge_new, bt_stage_old and
// bt_write_leaves in one pass, with no staging of the merged entries.
//
// Thread mapping: lane l holds the leaf's old entries l, l + 32, ... (E
// registers each, so a smaller order class keeps fewer registers and more
// warps in flight) and the group's batch keys ks + l, ks + l + 32, ... one
// chunk of 32 at a time. Latency: the group's words (gLeaf, gc, gp, gSum,
// oldNext) are loaded together, then the leaf's entries and the first
// chunk of batch keys together; nothing else is loaded on the common path
// (a group of at most 32 batch keys), so a warp waits on two rounds of
// loads instead of a chain of binary-search loads per entry.
//
// Ranks: an old entry's rank is its index j plus the batch's new keys
// below it, LO(packed[ks + L]) - LO(gSum[g]) where L counts the group's
// batch keys below it (every lane compares its entries with each batch key
// of the chunk, broadcast by a shuffle); LO(packed[ke]) is LO(gSum[g + 1]).
// An old entry whose key the batch holds is dropped (the batch's value
// wins). A batch key's rank is pos[i] + LO(packed[i]) - LO(gSum[g]). These
// are bt_stage_old's and bt_merge_new's ranks, so the result is
// bt_write_leaves' word for word.
//
// Values: with vAt == nullptr a batch key's value is v[i], or with vSel
// v[vSel[i]] (the batch's values as uploaded, gathered here by the kept
// positions); with vAt, v is not read, the batch key's slot is left for
// bt_scatter_values, and the slot's word index goes to vAt[i] (the batch's
// values may still be on their way to the device while the leaves are
// merged).
//
// An old entry that keeps its slot (one piece, no batch key below it, not
// the piece's first or last entry, which write the head and the change)
// is not written again.
//
// Invariant: every read of the leaf (its entries, count, parent) is done
// before __syncwarp, every write to it after; no other warp reads it. A
// group of many keys (a skewed batch) serializes on one warp: the launcher
// takes these kernels only when every group's batch keys are few.
template <int E>
__device__ __forceinline__ void merge_leaves(u64 G, const u64 *k, const u64 *v, const u64 *gSum, const u64 *packed,
                                             const u32 *pos, const u64 *gc, const u64 *gp, const u32 *gLeaf,
                                             const u32 *oldNext, u32 first, u32 order, u64 *keys, u64 *slots,
                                             u32 *count, u32 *parent, u32 *next, u32 *prev, u8 *kind, u32 *chId,
                                             u64 *chMax, const u32 *vSel, u64 *vAt) {
    const bool noVal = vAt != nullptr;
    const u32 lane = threadIdx.x & (WARP - 1);
    const u64 warps = (u64)gridDim.x * (blockDim.x / WARP);
    for (u64 g = (blockIdx.x * (u64)blockDim.x + threadIdx.x) / WARP; g < G; g += warps) {
        u32 leaf = gLeaf[g];
        u32 onext = oldNext[g];
        u64 gs0 = gSum[g], gs1 = gSum[g + 1], gp0 = gp[g];
        u32 c = (u32)(gc[g + 1] - gc[g]);
        u32 p = HI(gp[g + 1]) - HI(gp0);
        u32 xo = LO(gp0), rb = HI(gp0);
        u32 ks = HI(gs0), ke = HI(gs1), nb = ke - ks;
        u32 newBefore = LO(gs0), newEnd = LO(gs1);
        u64 base = (u64)leaf * order;
        u32 c0 = count[leaf];
        u32 up = parent[leaf];
        u64 ok[E], ov[E];
#pragma unroll
        for (int t = 0; t < E; t++) {
            u32 j = lane + WARP * t;
            ok[t] = 0;
            ov[t] = 0;
            if (j < c0) {
                ok[t] = keys[base + j];
                ov[t] = slots[base + j];
            }
        }
        // The first chunk of batch keys, loaded with the leaf's entries.
        u64 i = (u64)ks + lane;
        bool in = lane < nb;
        u64 bk = in ? k[i] : 0, bv = in && !noVal ? v[vSel != nullptr ? (u64)vSel[i] : i] : 0;
        u32 bpos = in ? pos[i] : 0, bpk = in ? LO(packed[i]) : newEnd;
        __syncwarp();
        u32 less[E];
        bool hit[E];
#pragma unroll
        for (int t = 0; t < E; t++) {
            less[t] = 0;
            hit[t] = false;
        }
        for (u32 cs = 0; cs < nb; cs += WARP) { // warp-uniform trip count; cs is the chunk's offset in the group
            if (cs != 0) {
                i = (u64)ks + cs + lane;
                in = cs + lane < nb;
                bk = in ? k[i] : 0;
                bv = in && !noVal ? v[vSel != nullptr ? (u64)vSel[i] : i] : 0;
                bpos = in ? pos[i] : 0;
                bpk = in ? LO(packed[i]) : newEnd;
            }
            u32 n = min((u32)WARP, nb - cs);
            for (u32 b = 0; b < n; b++) {
                u64 kb = __shfl_sync(FULL_MASK, bk, b);
#pragma unroll
                for (int t = 0; t < E; t++) {
                    less[t] += kb < ok[t] ? 1 : 0;
                    hit[t] = hit[t] || kb == ok[t];
                }
            }
            if (in) {
                u64 at = merge_put(bpos + (bpk - newBefore), bk, bv, noVal, c, p, leaf, first, xo, rb, up, onext, order,
                                   keys, slots, count, parent, next, prev, kind, chId, chMax);
                if (noVal) vAt[i] = at;
            }
        }
#pragma unroll
        for (int t = 0; t < E; t++) {
            u32 j = lane + WARP * t;
            u32 L = less[t];
            u32 below;
            if (nb <= WARP) { // warp-uniform: every lane takes the shuffle
                u32 x = __shfl_sync(FULL_MASK, bpk, L & (WARP - 1));
                below = (L < nb ? x : newEnd) - newBefore;
            } else {
                below = (j < c0 && !hit[t] && L < nb ? LO(packed[(u64)ks + L]) : newEnd) - newBefore;
            }
            if (j >= c0 || hit[t]) continue; // past the count, or the batch's value wins
            if (p == 1 && below == 0 && j != 0 && j + 1 != c) continue; // in place already
            merge_put(j + below, ok[t], ov[t], false, c, p, leaf, first, xo, rb, up, onext, order, keys, slots, count,
                      parent, next, prev, kind, chId, chMax);
        }
        __syncwarp(); // the warp's next group starts after every lane is done with this one
    }
}

// bt_merge_leaves_E: merge_leaves for trees of order <= 32 * E (the
// launcher picks the smallest E that holds the order). NVRTC 11.8 gives
// them 56, 64, 78 and 102 registers a thread for sm_90, no spills. A
// budget of 48 registers for E = 2 (__launch_bounds__(256, 5): 40 warps
// an SM instead of 32, 40 bytes of spills a thread) measured no faster on
// an H200 (BENCHMARKS.md).
#define MERGE_LEAVES_KERNEL(E)                                                                                        \
    extern "C" __global__ void bt_merge_leaves_##E(u64 G, const u64 *k, const u64 *v, const u64 *gSum,                \
                                                   const u64 *packed, const u32 *pos, const u64 *gc, const u64 *gp,   \
                                                   const u32 *gLeaf, const u32 *oldNext, u32 first, u32 order,        \
                                                   u64 *keys, u64 *slots, u32 *count, u32 *parent, u32 *next,         \
                                                   u32 *prev, u8 *kind, u32 *chId, u64 *chMax, const u32 *vSel,       \
                                                   u64 *vAt) {                                                        \
        merge_leaves<E>(G, k, v, gSum, packed, pos, gc, gp, gLeaf, oldNext, first, order, keys, slots, count, parent, \
                        next, prev, kind, chId, chMax, vSel, vAt);                                                    \
    }
MERGE_LEAVES_KERNEL(1)
MERGE_LEAVES_KERNEL(2)
MERGE_LEAVES_KERNEL(4)
MERGE_LEAVES_KERNEL(8)

// bt_write_kept: one thread per kept entry r < total (grid-stride tiles,
// the group found by block_groups), delete only: entry r of group g (largest g with gc[g] <= r) goes back to its
// leaf at slot r - gc[g] (the CPU engine's in-place compaction: slots at
// and beyond the new count keep their stale words).
extern "C" __global__ void bt_write_kept(u64 total, u64 G, const u64 *gc, const u32 *gLeaf, const u64 *ok,
                                         const u64 *ov, u32 order, u64 *keys, u64 *slots) {
    __shared__ u64 bracket[2];
    TILE_LOOP(total) {
        u64 g = block_groups(GroupOff{gc, ALL64, nullptr, 0}, G, tile, total, bracket);
        u64 r = tile + threadIdx.x;
        if (r >= total) continue;
        u64 at = (u64)gLeaf[g] * order + (r - gc[g]);
        keys[at] = ok[r];
        slots[at] = ov[r];
    }
}

// bt_delete_leaves: one thread per touched leaf g < G (grid-stride),
// delete only, after bt_write_kept. A leaf with c > 0 kept entries gets
// count c and records itself and its new max key at its piece place; an
// emptied leaf is freed (count 0, kind free; bt_unlink_* fix the chain).
extern "C" __global__ void bt_delete_leaves(u64 G, const u64 *gc, const u64 *gp, const u32 *gLeaf,
                                            const u64 *ok, u32 *count, u8 *kind, u32 *chId, u64 *chMax) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        u32 leaf = gLeaf[g];
        u64 c = gc[g + 1] - gc[g];
        if (c > 0) {
            count[leaf] = (u32)c;
            chId[HI(gp[g])] = leaf;
            chMax[HI(gp[g])] = ok[gc[g + 1] - 1];
        } else {
            count[leaf] = 0;
            kind[leaf] = KIND_FREE;
        }
    }
}

// emptied reports whether touched leaf g lost all its entries.
__device__ __forceinline__ bool emptied(const u64 *gc, u64 g) { return gc[g + 1] == gc[g]; }

// bt_unlink_heads: one thread per touched leaf g < G (grid-stride). A run
// is a maximal sequence of emptied leaves adjacent in the leaf chain (so
// consecutive groups); head[g] = 1 at the first leaf of a run, else 0.
extern "C" __global__ void bt_unlink_heads(u64 G, const u64 *gc, const u32 *gLeaf, const u32 *next, u32 *head) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        bool h = emptied(gc, g) && (g == 0 || !emptied(gc, g - 1) || next[gLeaf[g - 1]] != gLeaf[g]);
        head[g] = h ? 1 : 0;
    }
}

// bt_unlink_mark: one thread per g < G (grid-stride); run[] is the
// inclusive scan of head[], so the head of run number run[g] records
// itself in headOf[run[g] - 1].
extern "C" __global__ void bt_unlink_mark(u64 G, const u64 *gc, const u32 *run, u32 *headOf) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        if (emptied(gc, g) && run[g] > (g == 0 ? 0u : run[g - 1])) headOf[run[g] - 1] = (u32)g;
    }
}

// bt_unlink_read: one thread per emptied leaf g < G (grid-stride): p0[g] =
// the prev link of its run's head, the nearest surviving leaf before the
// run (or nil). Reads only: the links change in bt_unlink_write.
extern "C" __global__ void bt_unlink_read(u64 G, const u64 *gc, const u32 *run, const u32 *headOf,
                                          const u32 *gLeaf, const u32 *prev, u32 *p0) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        if (emptied(gc, g)) p0[g] = prev[gLeaf[headOf[run[g] - 1]]];
    }
}

// bt_unlink_write: one thread per emptied leaf g < G (grid-stride), the
// result of the CPU engine's unlinking in key order: the leaf's prev
// becomes p0 (its next stays); the last leaf of a run links p0 and its old
// next n to each other. Runs are disjoint, so every link has one writer.
extern "C" __global__ void bt_unlink_write(u64 G, const u64 *gc, const u32 *gLeaf, const u32 *p0,
                                           u32 *next, u32 *prev) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        if (!emptied(gc, g)) continue;
        u32 leaf = gLeaf[g];
        u32 a = p0[g];
        prev[leaf] = a;
        u32 n = next[leaf];
        bool last = g + 1 == G || !emptied(gc, g + 1) || n != gLeaf[g + 1];
        if (last) {
            if (a != NIL) next[a] = n;
            if (n != NIL) prev[n] = a;
        }
    }
}

// bt_parent_of: one thread per touched node g < G of a level (grid-stride).
// par[g] = its parent; packed[g] = 1<<32 | its replacement count (from the
// scanned gp's high halves); slot[g] = its entry in the parent, found by
// its old max key (the parent's key for it).
extern "C" __global__ void bt_parent_of(u64 G, const u32 *node, const u64 *oldMax, const u64 *gp, u32 order,
                                        const u64 *keys, const u32 *count, const u32 *parent,
                                        u32 *par, u64 *packed, u32 *slot) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < G; g += (u64)gridDim.x * blockDim.x) {
        u32 P = parent[node[g]];
        par[g] = P;
        packed[g] = (1ull << 32) | (u64)(HI(gp[g + 1]) - HI(gp[g]));
        slot[g] = lower_bound(keys + (u64)P * order, count[P], oldMax[g]);
    }
}

// bt_parent_sizes: one thread per g <= bound (grid-stride), where bound
// (the touched children, known to the host) is at least G = *nG, the
// touched parents counted on the device by the reduction, so the host
// need not read G before the launch. For g < G, pSum[g] (hi: changed
// children, lo: their replacements) is the reduction by parent of
// bt_parent_of's packed; the parent's new entries c = old - changed +
// replacements go to gc[g] (plus 1<<40 when c is 0: the parent is freed
// here, count 0 and kind free), its pieces and extra nodes to gp[g] as in
// bt_leaf_sizes, its old max key and its own parent to oldMax, up. Every
// g in [G, bound] zeroes pSum[g], gc[g], gp[g], so that exclusive scans
// over bound + 1 elements hold the totals at G and at bound.
extern "C" __global__ void bt_parent_sizes(u64 bound, const u32 *nG, const u32 *pNode, u64 *pSum, u32 order,
                                           u32 fill, const u64 *keys, u32 *count, const u32 *parent, u8 *kind,
                                           u64 *gc, u64 *gp, u64 *oldMax, u32 *up) {
    const u64 G = *nG;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g <= bound; g += (u64)gridDim.x * blockDim.x) {
        if (g >= G) {
            pSum[g] = 0;
            gc[g] = 0;
            gp[g] = 0;
            continue;
        }
        u32 P = pNode[g];
        u64 c0 = count[P];
        u64 c = c0 - HI(pSum[g]) + LO(pSum[g]);
        size_touched(g, P, c0, c, c == 0 ? 1ull << FREED_SHIFT : 0, order, fill, keys, gc, gp, oldMax);
        up[g] = parent[P];
        if (c == 0) {
            count[P] = 0;
            kind[P] = KIND_FREE;
        }
    }
}

// bt_stage_repl: one thread per replacement r < R of the level below
// (grid-stride): chId, chMax of child group g (largest g with hi(cgp[g])
// <= r) go to the staged entries of its parent group pg (largest pg with
// hi(pSum[pg]) <= g, pSum scanned) at the child's slot, shifted by the
// replacements and changed children before it in that parent.
extern "C" __global__ void bt_stage_repl(u64 R, u64 G, const u64 *cgp, const u32 *chId, const u64 *chMax,
                                         const u32 *slot, u64 PG, const u64 *pSum, const u64 *gc,
                                         u64 *sk, u64 *sv) {
    for (u64 r = blockIdx.x * (u64)blockDim.x + threadIdx.x; r < R; r += (u64)gridDim.x * blockDim.x) {
        u64 g = last_le_hi(cgp, G, r);
        u64 pg = last_le_hi(pSum, PG, g);
        u64 a = HI(pSum[pg]);
        u64 at = (gc[pg] & OFF40) + slot[g] + (HI(cgp[g]) - HI(cgp[a])) - (g - a) + (r - HI(cgp[g]));
        sk[at] = chMax[r];
        sv[at] = chId[r];
    }
}

// bt_stage_keep: one thread per old entry e < nOld of the touched parents,
// flattened in group order (grid-stride; group pg's old entries start at
// its staged offset - replacements before it + changed children before
// it). An entry whose child is changed (its slot is among the group's
// changed children's slots, which increase) is skipped; the others go to
// the staged entries shifted by the replacements and changed children
// before them.
extern "C" __global__ void bt_stage_keep(u64 nOld, u64 PG, const u64 *pSum, const u64 *gc, const u32 *pNode,
                                         const u32 *slot, const u64 *cgp, u32 order, const u64 *keys,
                                         const u64 *slots, u64 *sk, u64 *sv) {
    for (u64 e = blockIdx.x * (u64)blockDim.x + threadIdx.x; e < nOld; e += (u64)gridDim.x * blockDim.x) {
        u64 lo = 0, hi = PG;
        while (hi - lo > 1) {
            u64 mid = (lo + hi) >> 1;
            u64 off = (gc[mid] & OFF40) - LO(pSum[mid]) + HI(pSum[mid]);
            if (off <= e) lo = mid; else hi = mid;
        }
        u64 pg = lo;
        u64 j = e - ((gc[pg] & OFF40) - LO(pSum[pg]) + HI(pSum[pg]));
        u64 a = HI(pSum[pg]), b = HI(pSum[pg + 1]);
        u64 x = a, y = b; // first changed child with slot >= j
        while (x < y) {
            u64 mid = (x + y) >> 1;
            if (slot[mid] < j) x = mid + 1; else y = mid;
        }
        if (x < b && slot[x] == j) continue;
        u64 k = x - a;
        u64 at = (gc[pg] & OFF40) + j + (HI(cgp[x]) - HI(cgp[a])) - k;
        u64 src = (u64)pNode[pg] * order + j;
        sk[at] = keys[src];
        sv[at] = slots[src];
    }
}

// bt_write_internal: one thread per staged entry e < total (grid-stride
// tiles, the group found by block_groups):
// as bt_write_leaves for internal nodes. The entry goes to its piece, its
// child gets the piece as parent; the slot-0 thread writes the piece's
// count, kind and parent (the old node's parent), the last-slot thread
// records the piece's id and max key.
extern "C" __global__ void bt_write_internal(u64 total, u64 G, const u64 *gc, const u64 *gp, const u32 *pNode,
                                             const u32 *up, const u64 *sk, const u64 *sv, u32 first,
                                             u32 order, u64 *keys, u64 *slots, u32 *count, u32 *parent,
                                             u8 *kind, u32 *chId, u64 *chMax) {
    __shared__ u64 bracket[2];
    TILE_LOOP(total) {
        u64 g = block_groups(GroupOff{gc, OFF40, nullptr, 0}, G, tile, total, bracket);
        u64 e = tile + threadIdx.x;
        if (e >= total) continue;
        u64 c = (gc[g + 1] & OFF40) - (gc[g] & OFF40);
        u64 p = HI(gp[g + 1]) - HI(gp[g]);
        u64 q, s, size;
        part_of(e - (gc[g] & OFF40), c, p, &q, &s, &size);
        u32 id = piece_id(pNode[g], first, LO(gp[g]), q);
        u64 at = (u64)id * order + s;
        keys[at] = sk[e];
        slots[at] = sv[e];
        parent[(u32)sv[e]] = id;
        if (s == 0) {
            put_head(count, kind, id, size, KIND_INTERNAL);
            parent[id] = up[g];
        }
        if (s + 1 == size) {
            chId[HI(gp[g]) + q] = id;
            chMax[HI(gp[g]) + q] = sk[e];
        }
    }
}

// bt_level_list: as bt_level for n children given by id and max key lists
// (the pieces of a split root), building the p nodes first..first+p-1.
extern "C" __global__ void bt_level_list(u64 n, u64 p, const u32 *ids, const u64 *maxes, u32 first, u32 order,
                                         u64 *keys, u64 *slots, u32 *count, u32 *parent, u8 *kind) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        Place e = place_of(i, n, p, first, order);
        keys[e.at] = maxes[i];
        slots[e.at] = ids[i];
        parent[ids[i]] = e.id;
        if (e.s == 0) {
            put_head(count, kind, e.id, e.size, KIND_INTERNAL);
            parent[e.id] = NIL;
        }
    }
}

// bt_node_counts: one thread per node i < n of a list (grid-stride):
// cnt[i] = its entry count; thread n zeroes cnt[n] for the scan.
extern "C" __global__ void bt_node_counts(u64 n, const u32 *list, const u32 *count, u64 *cnt) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i <= n; i += (u64)gridDim.x * blockDim.x) {
        cnt[i] = i == n ? 0 : count[list[i]];
    }
}

// bt_gather: one thread per entry e < total of the nodes of list (in key
// order; node i's entries start at off[i], the scanned counts;
// grid-stride): the entry's key and slot go to outK[e], outV[e]; for
// internal nodes (children != 0) the slot is a child id, written to
// outC[e] instead. Used by the rebuild to list the leaves in key order,
// level by level, then their pairs.
extern "C" __global__ void bt_gather(u64 total, u64 n, const u32 *list, const u64 *off, u32 order,
                                     const u64 *keys, const u64 *slots, int children,
                                     u64 *outK, u64 *outV, u32 *outC) {
    for (u64 e = blockIdx.x * (u64)blockDim.x + threadIdx.x; e < total; e += (u64)gridDim.x * blockDim.x) {
        u64 i = last_le_u64(off, n, e, ALL64);
        u64 at = (u64)list[i] * order + (e - off[i]);
        if (children) {
            outC[e] = (u32)slots[at];
        } else {
            outK[e] = keys[at];
            outV[e] = slots[at];
        }
    }
}
