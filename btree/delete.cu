// CUBPT: a delete's leaves (delete_gpu.go launches these): compaction,
// freed leaves unlinked from the chain, and the rebuild's gathers. Part of
// btree.cu's program; shared code in btree.cuh.
#include "btree/btree.cuh"

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
