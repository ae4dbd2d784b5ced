// update.cu: PhaseNU's expansion and insert phases (update_gpu.go launches
// them): walks, short-node expansion, node id allocation, CAS inserts and
// deletes, reclaiming unpublished ids.

#include "mpt/mpt.cuh"

// ---------------------------------------------------------------- PhaseNU: expand

// mpt_walk: every walk not DONE goes on from (cur, dep) down the trie.
// Thread mapping: one thread per kept operation. It stops at its target
// (ST_TARGET: a branch whose slot for the next nibble is empty, a branch
// where the key ends, or a leaf holding exactly the key), at nothing to do
// (ST_DONE: a delete that leaves the trie), or, for an insert that leaves
// the trie inside a short node, at that node (ST_WAIT) after raising the
// node's need to 1 + the nibbles they share; the first walk to raise it
// appends the node to the expansion list. Invariant: nodes are only read
// (need and the lists excepted), so walks are independent.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_walk(Node* nodes, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ ops,
         const u32* __restrict__ klen, const u32* __restrict__ vid, u64 m, u32* __restrict__ cur,
         u32* __restrict__ dep, u8* __restrict__ st, u32* __restrict__ explist, u32* __restrict__ ctl) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        if (st[j] == ST_DONE)
            continue;
        const u8* k = key_of(keys, stride, ops, j);
        const u32 len = klen[j];
        u32 n = cur[j], d = dep[j];
        u8 state = ST_ACTIVE;
        while (state == ST_ACTIVE) {
            Node* nd = &nodes[n];
            if (nd->kind == KIND_BRANCH) {
                if (d == len) {
                    state = ST_TARGET;
                    break;
                }
                const u32 c = nd->child[key_nib(k, d)];
                if (c == 0) {
                    state = ST_TARGET;
                    break;
                }
                n = c;
                ++d;
                continue;
            }
            const u32 L = nd->plen;
            u32 c = 0;
            const u32 lim = min(L, len - d);
            while (c < lim && path_nib(nd, c) == key_nib(k, d + c))
                ++c;
            if (nd->kind == KIND_EXT && c == L) {
                n = nd->child[0];
                d += L;
                continue;
            }
            if (nd->kind == KIND_LEAF && c == L && d + L == len) {
                state = ST_TARGET;
                break;
            }
            if (vid[j] == 0) {
                state = ST_DONE; // a delete of a key that is not there
                break;
            }
            const u32 old = atomicMax(&nd->need, c + 1);
            if (old == 0)
                explist[atomicAdd(&ctl[CTL_NEXP], 1u)] = n;
            atomicAdd(&ctl[CTL_WAIT], 1u);
            state = ST_WAIT;
        }
        cur[j] = n;
        dep[j] = d;
        st[j] = state;
    }
}

// expand_shape returns, for short node nd expanded to depth m (nd->need-1),
// the number of new nodes: the chain's m branches below nd (nd itself
// becomes the chain's first branch) and the remainder short node, which a
// leaf always keeps below the chain when m < plen and an extension only
// when m + 1 < plen (otherwise its child hangs from the chain directly).
__device__ __forceinline__ u32 expand_count(const Node* nd) {
    const u32 m = nd->need - 1, L = nd->plen;
    const bool rem = nd->kind == KIND_LEAF ? m < L : m + 1 < L;
    return m + (rem ? 1u : 0u);
}

// mpt_expand_count: counts[i] = the new nodes expansion list entry i needs.
// Thread mapping: one thread per listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_expand_count(const Node* __restrict__ nodes, const u32* __restrict__ explist, u64 ne,
                 u32* __restrict__ counts) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < ne; i += (u64)gridDim.x * MPT_BLOCK)
        counts[i] = expand_count(&nodes[explist[i]]);
}

// mpt_alloc_ids: ids[r] for r < total: the free list's ids from its end
// (nfree of them), then the bump region from bump on. Thread mapping: one
// thread per id.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_alloc_ids(const u32* __restrict__ freelist, u32 nfree, u32 bump, u64 total, u32* __restrict__ ids) {
    for (u64 r = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; r < total; r += (u64)gridDim.x * MPT_BLOCK)
        ids[r] = r < nfree ? freelist[nfree - 1 - r] : bump + (u32)(r - nfree);
}

// mpt_expand: expands the short node of list entry i into the chain of
// one-child branches nd = b0 -> b1 -> ... -> bm following its path, then
// at bm: the remainder short node (path after nibble m) under nibble m, or
// an extension's child directly, or (m == plen, a leaf) the value in slot
// 16. The new nodes are ids[offs[i] ...]; all of them, and nd, are marked
// dirty. Thread mapping: one thread per listed node; the lists are
// disjoint (a node is listed once), so every write has one writer.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_expand(Node* nodes, const u32* __restrict__ explist, u64 ne, const u32* __restrict__ offs,
           const u32* __restrict__ ids, u32* __restrict__ touched, u32* __restrict__ ctl) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < ne; i += (u64)gridDim.x * MPT_BLOCK) {
        const u32 n = explist[i];
        Node* nd = &nodes[n];
        const u32 m = nd->need - 1, L = nd->plen, kind = nd->kind;
        const u32 tail = kind == KIND_LEAF ? nd->val : nd->child[0];
        u8 path[MPT_PATH_BYTES];
        for (u32 b = 0; b < (L + 1) / 2; ++b)
            path[b] = nd->path[b];
        const u32* my = ids + offs[i];
        const bool hasRem = kind == KIND_LEAF ? m < L : m + 1 < L;
        // nd becomes the chain's first branch.
        init_node(nd, KIND_BRANCH, nd->parent);
        mark(nodes, n, touched, ctl);
        u32 prev = n;
        for (u32 k = 1; k <= m; ++k) {
            const u32 b = my[k - 1];
            init_node(&nodes[b], KIND_BRANCH, prev);
            nodes[prev].child[key_nib(path, k - 1)] = b;
            mark(nodes, b, touched, ctl);
            prev = b;
        }
        if (m == L) { // a leaf whose key ends at the chain's end
            nodes[prev].val = tail;
        } else if (hasRem) {
            const u32 r = my[m];
            init_short(nodes, r, kind, prev, path, m + 1, L - m - 1, tail);
            nodes[prev].child[key_nib(path, m)] = r;
            mark(nodes, r, touched, ctl);
        } else { // an extension whose last nibble is the chain's last slot
            nodes[prev].child[key_nib(path, m)] = tail;
            nodes[tail].parent = prev;
        }
    }
}

// ---------------------------------------------------------------- PhaseNU: insert

// insert_count returns the new nodes insert j adds to mpt_insert's pool: none
// at an exact leaf or where its key ends at the branch; otherwise its leaf
// (unless its key ends at depth need, where the last branch holds its
// value), the branches below its target (depths d+1 .. need) that the
// previous operation does not also need (when that one is an insert, it
// stops at the same empty slot and needs the branches down to their shared
// prefix share), and one spare: a thread that loses a CAS keeps the id it
// drew for its next level, so at most one drawn id per thread is left over.
// The sum over the batch bounds the ids the threads draw.
__device__ __forceinline__ u32 insert_count(const Node* nodes, u32 n, u32 d, u32 len, u32 need, u32 share) {
    if (nodes[n].kind != KIND_BRANCH || d == len)
        return 0;
    if (d < need)
        return (need - max(d, min(share, need))) + (need < len ? 1u : 0u) + 1u;
    return 1;
}

// mpt_insert_count: counts[j] = the new nodes operation j needs (0 for
// deletes and finished walks). Thread mapping: one thread per operation.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_insert_count(const Node* __restrict__ nodes, const u32* __restrict__ klen, const u32* __restrict__ vid,
                 const u32* __restrict__ need, const u32* __restrict__ prev, const u32* __restrict__ cur,
                 const u32* __restrict__ dep, const u8* __restrict__ st, u64 m, u32* __restrict__ counts) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        u32 c = 0;
        if (st[j] == ST_TARGET && vid[j] != 0) {
            const u32 share = j > 0 && vid[j - 1] != 0 ? prev[j] : 0;
            c = insert_count(nodes, cur[j], dep[j], klen[j], need[j], share);
        }
        counts[j] = c;
    }
}

// draw_id takes the next id of mpt_insert's pool, or 0 (and flags the
// error word) when the pool is exhausted, which the counts rule out.
__device__ __forceinline__ u32 draw_id(const u32* ids, u32 total, u32* ctl) {
    const u32 r = atomicAdd(&ctl[CTL_POOL], 1u);
    if (r >= total) {
        atomicMax(&ctl[CTL_ERROR], 2u);
        return 0;
    }
    return ids[r];
}

// mpt_insert: applies operation j at its target. A delete clears the value
// of an exact leaf or of the branch where its key ends. An insert sets that
// value, or, at an empty slot, walks down its key creating each shared
// branch with one atomicCAS on the parent's slot (a loser follows the
// winner's branch and keeps its id for the next level), then hangs its
// leaf in the slot no other key of the batch uses. New ids are drawn from
// one pool for the batch (ids[0, total), sized by mpt_insert_count).
// Thread mapping: one thread per operation. Invariant: a new node is fully
// written and fenced before the CAS that publishes it; child slots are
// only changed by CAS.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_insert(Node* nodes, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ ops,
           const u32* __restrict__ klen, const u32* __restrict__ vid, const u32* __restrict__ need,
           const u32* __restrict__ cur, const u32* __restrict__ dep, const u8* __restrict__ st, u64 m,
           const u32* __restrict__ ids, u32 total, u32* __restrict__ touched, u32* __restrict__ ctl) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        if (st[j] != ST_TARGET)
            continue;
        const u8* k = key_of(keys, stride, ops, j);
        const u32 len = klen[j], v = vid[j], nd_ = need[j];
        u32 n = cur[j], d = dep[j];
        Node* nd = &nodes[n];
        if (nd->kind == KIND_LEAF) {
            if (nd->val != v) {
                nd->val = v;
                mark(nodes, n, touched, ctl);
            }
            continue;
        }
        if (d == len) {
            if (nd->val != v) {
                nd->val = v;
                mark(nodes, n, touched, ctl);
            }
            continue;
        }
        if (v == 0)
            continue; // a delete at an empty slot: the key is absent
        u32 held = 0; // an id drawn and not yet published
        while (d < nd_) {
            const u32 s = key_nib(k, d);
            const u32 c = ((volatile Node*)nodes)[n].child[s];
            if (c != 0) { // a neighbour already made this branch
                n = c;
                ++d;
                continue;
            }
            if (held == 0 && (held = draw_id(ids, total, ctl)) == 0)
                break;
            const u32 b = held;
            init_node(&nodes[b], KIND_BRANCH, n);
            __threadfence();
            const u32 old = atomicCAS(&nodes[n].child[s], 0u, b);
            if (old == 0) {
                mark(nodes, n, touched, ctl);
                mark(nodes, b, touched, ctl);
                held = 0;
                n = b;
            } else {
                nodes[b].kind = KIND_FREE; // not published: kept for the next level, else reclaimed
                n = old;
            }
            ++d;
        }
        if (d < nd_)
            continue; // pool exhausted (flagged)
        if (d == len) {
            nodes[n].val = v;
            mark(nodes, n, touched, ctl);
            continue;
        }
        const u32 leaf = held != 0 ? held : draw_id(ids, total, ctl);
        if (leaf == 0)
            continue;
        init_short(nodes, leaf, KIND_LEAF, n, k, d + 1, len - d - 1, v);
        __threadfence();
        const u32 old = atomicCAS(&nodes[n].child[key_nib(k, d)], 0u, leaf);
        if (old != 0)
            atomicMax(&ctl[CTL_ERROR], 1u); // another key took this key's own slot
        mark(nodes, n, touched, ctl);
        mark(nodes, leaf, touched, ctl);
    }
}

// mpt_reclaim: appends every reserved id a CAS loser left unpublished (kind
// FREE) to the free list at base + the CTL_FREED counter. Thread mapping:
// one thread per reserved id.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_reclaim(const Node* __restrict__ nodes, const u32* __restrict__ ids, u64 total, u32* __restrict__ freelist,
            u32 base, u32* __restrict__ ctl) {
    for (u64 r = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; r < total; r += (u64)gridDim.x * MPT_BLOCK) {
        const u32 id = ids[r];
        if (nodes[id].kind == KIND_FREE)
            freelist[base + atomicAdd(&ctl[CTL_FREED], 1u)] = id;
    }
}
