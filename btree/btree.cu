// CUBPT kernels: the GPU engine of package btree (the *_gpu.go files
// launch them; btree_gpu.go loads them). This file holds the bulk build,
// the batch sort's helpers and the lookups, and includes the kernels of
// the other operations, one file each around the shared header
// btree.cuh (the node layout, descents and batch helpers): ranges.cu
// (range queries), locate.cu (a batch's leaves), insert.cu (leaf merges),
// delete.cu (leaf deletes, unlinks, the rebuild's gathers) and
// propagate.cu (parent levels). They compile as one program.
#include "btree/btree.cuh"

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

// The other operations (see above).
#include "btree/ranges.cu"
#include "btree/locate.cu"
#include "btree/insert.cu"
#include "btree/delete.cu"
#include "btree/propagate.cu"
