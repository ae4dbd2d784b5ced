// compress.cu: the dirty set (marking ancestors, pending counters, starts) and
// PhaseNU's compress back to canonical form (compress_gpu.go launches them).

#include "mpt/mpt.cuh"

// ---------------------------------------------------------------- dirty set

// mpt_mark_up: for each of the first nt nodes of the dirty list, marks its
// ancestors dirty, appending each newly marked one, and stops at the first
// ancestor already marked (whose own walk covers the rest). Thread mapping:
// one thread per listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_mark_up(Node* nodes, u32* touched, u64 nt, u32* ctl) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK) {
        u32 p = nodes[touched[i]].parent;
        while (p != 0) {
            const u32 old = atomicOr(&nodes[p].flags, FLAG_DIRTY);
            if (old & FLAG_DIRTY)
                break;
            touched[atomicAdd(&ctl[CTL_TOUCHED], 1u)] = p;
            p = nodes[p].parent;
        }
    }
}

// mpt_count_pending: every live listed node adds one to its parent's
// pending counter (marking). Thread mapping: one thread per listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_count_pending(Node* nodes, const u32* __restrict__ touched, u64 nt) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK) {
        const Node* nd = &nodes[touched[i]];
        if (nd->kind != KIND_FREE && nd->parent != 0)
            atomicAdd(&nodes[nd->parent].pending, 1u);
    }
}

// mpt_starts: appends every live listed node without pending children to
// the start list. Thread mapping: one thread per listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_starts(const Node* __restrict__ nodes, const u32* __restrict__ touched, u64 nt, u32* __restrict__ starts,
           u32* __restrict__ ctl) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK) {
        const u32 n = touched[i];
        if (nodes[n].kind != KIND_FREE && nodes[n].pending == 0)
            starts[atomicAdd(&ctl[CTL_STARTS], 1u)] = n;
    }
}

// mpt_live_flags: flags[i] = 1 when listed node i is live (not freed by
// compress), for compacting the dirty list. Thread mapping: one thread per
// listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_live_flags(const Node* __restrict__ nodes, const u32* __restrict__ touched, u64 nt, u8* __restrict__ flags) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK)
        flags[i] = nodes[touched[i]].kind != KIND_FREE;
}

// ---------------------------------------------------------------- PhaseNU: compress

// free_node returns node c to the free list.
__device__ __forceinline__ void free_node(volatile Node* c, u32 id, u32* freelist, u32 base, u32* ctl) {
    c->kind = KIND_FREE;
    c->flags = 0;
    c->pending = 0;
    freelist[base + atomicAdd(&ctl[CTL_FREED], 1u)] = id;
}

// absorb makes node nd (id n) the short node [first nibble s, if s < 16]
// + child c's path, taking c's child or value, and frees c (a short node).
__device__ void absorb(volatile Node* nodes, u32 n, int s, u32 c, u32* freelist, u32 base, u32* ctl) {
    volatile Node* nd = &nodes[n];
    volatile Node* cn = &nodes[c];
    const u32 cl = cn->plen;
    const u32 off = s >= 0 ? 1 : 0;
    u32 L = off + cl;
    u8 path[MPT_PATH_BYTES];
    if (off)
        set_nib(path, 0, (u32)s);
    // Read the child's path before writing the node's (distinct nodes, but
    // keep the order obvious).
    for (u32 q = 0; q < cl; ++q)
        set_nib(path, off + q, vpath_nib(cn, q));
    const u32 kind = cn->kind;
    if (s < 0) { // an extension absorbing a short child: its own path first
        const u32 pl = nd->plen;
        u8 full[MPT_PATH_BYTES];
        for (u32 q = 0; q < pl; ++q)
            set_nib(full, q, vpath_nib(nd, q));
        for (u32 q = 0; q < cl; ++q)
            set_nib(full, pl + q, vpath_nib(cn, q));
        L = pl + cl;
        for (u32 b = 0; b < (L + 1) / 2; ++b)
            nd->path[b] = full[b];
    } else {
        for (u32 b = 0; b < (L + 1) / 2; ++b)
            nd->path[b] = path[b];
    }
    nd->plen = L;
    nd->kind = kind;
    if (kind == KIND_LEAF) {
        nd->val = cn->val;
        for (int q = 0; q < 16; ++q)
            nd->child[q] = 0;
    } else {
        const u32 g = cn->child[0];
        for (int q = 0; q < 16; ++q)
            nd->child[q] = 0;
        nd->child[0] = g;
        nd->val = 0;
        nodes[g].parent = n;
    }
    free_node(cn, c, freelist, base, ctl);
}

// compress_node puts dirty node n into canonical form, its children being
// canonical already: a branch drops freed children, and with no entry left
// it is freed, with only its value it becomes a leaf of empty path, with
// one child it becomes a short node (merged with a short child); an
// extension merges with a short child or vanishes with an empty one; a
// leaf without value is freed. Returns false when n was freed.
__device__ bool compress_node(volatile Node* nodes, u32 n, u32* freelist, u32 base, u32* ctl) {
    volatile Node* nd = &nodes[n];
    const u32 kind = nd->kind;
    if (kind == KIND_LEAF) {
        if (nd->val == 0) {
            free_node(nd, n, freelist, base, ctl);
            return false;
        }
        return true;
    }
    if (kind == KIND_EXT) {
        const u32 c = nd->child[0];
        const u32 ck = nodes[c].kind;
        if (ck == KIND_FREE) {
            free_node(nd, n, freelist, base, ctl);
            return false;
        }
        if (ck != KIND_BRANCH)
            absorb(nodes, n, -1, c, freelist, base, ctl);
        return true;
    }
    int entries = nd->val != 0 ? 1 : 0, only = -1;
    for (int s = 0; s < 16; ++s) {
        const u32 c = nd->child[s];
        if (c == 0)
            continue;
        if (nodes[c].kind == KIND_FREE) {
            nd->child[s] = 0;
            continue;
        }
        ++entries;
        only = s;
    }
    if (entries == 0) {
        free_node(nd, n, freelist, base, ctl);
        return false;
    }
    if (entries > 1)
        return true;
    if (nd->val != 0) { // only the value: a leaf of empty path
        nd->kind = KIND_LEAF;
        nd->plen = 0;
        return true;
    }
    const u32 c = nd->child[only];
    if (nodes[c].kind == KIND_BRANCH) { // an extension of one nibble
        nd->kind = KIND_EXT;
        nd->plen = 1;
        nd->path[0] = (u8)(only << 4);
        nd->child[only] = 0;
        nd->child[0] = c;
        return true;
    }
    absorb(nodes, n, only, c, freelist, base, ctl);
    return true;
}

// mpt_compress: canonical form, bottom-up. Thread mapping: one thread per
// start (a dirty node without dirty children); after compressing its node
// the thread decrements the parent's counter and goes on with the parent
// only if it brought the counter to zero (its other dirty children are
// done), so every dirty node is compressed once, after its children.
// Freed nodes keep their parent link for that walk. Invariant: node
// writes are fenced before the decrement that may hand the parent on.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_compress(Node* nodes_, const u32* __restrict__ starts, u64 ns, u32* __restrict__ freelist, u32 base,
             u32* __restrict__ ctl) {
    volatile Node* nodes = nodes_;
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < ns; i += (u64)gridDim.x * MPT_BLOCK) {
        u32 n = starts[i];
        for (;;) {
            const u32 p = nodes[n].parent;
            compress_node(nodes, n, freelist, base, ctl);
            __threadfence();
            if (p == 0)
                break;
            if (atomicSub((u32*)&nodes_[p].pending, 1u) != 1u)
                break;
            __threadfence();
            n = p;
        }
    }
}
