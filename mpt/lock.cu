// lock.cu: LockNU, optimistic lock coupling (lock_gpu.go launches it), and
// the reset of version words it and abandoned expansions leave.

#include "mpt/mpt.cuh"

// ---------------------------------------------------------------- LockNU

// LockNU: optimistic lock coupling. A walk reads a node's version word
// (bit 0 set: locked), then the fields it needs, then the version again;
// a locked node or a changed version restarts the walk from the root. A
// change locks the one node it rewrites (CAS of the version it read to
// version | 1), writes, fences, and unlocks with version + 2. Every change
// rewrites its node in place (a short node splits into itself plus new
// nodes below it), so a parent never changes, and the trie stays canonical:
// LockNU needs no expansion or compress. Inserts only (deletes collapse
// branches upward: the decision model sends batches with deletes to
// PhaseNU).

__device__ __forceinline__ u64 read_version(const volatile Node* n) {
    return *(const volatile u64*)&n->need;
}

__device__ __forceinline__ bool try_lock(Node* n, u64 v) { return atomicCAS(version_of(n), v, v | 1ull) == v; }

__device__ __forceinline__ void unlock(Node* n, u64 v) {
    __threadfence();
    atomicExch(version_of(n), v + 2);
}

// lock_split rewrites the locked short node n (kind, path P of L nibbles,
// tail = leaf value or extension child) where key nibbles [d, len) share c
// < L nibbles with P, or all L of a leaf's path and go on: n keeps P[0, c)
// as an extension to a new branch B (or becomes B itself when c = 0); B
// holds P's side under P[c] (a remainder short node, or an extension's
// child directly, or in slot 16 a leaf value whose key ends there) and the
// key's side under key[d+c] (a new leaf) or in slot 16. New ids come from
// my[*used ...].
__device__ void lock_split(Node* nodes, u32 n, u32 c, const u8* k, u32 d, u32 len, u32 v, const u32* my, u32* used,
                           u32* touched, u32* ctl) {
    Node* nd = &nodes[n];
    const u32 kind = nd->kind, L = nd->plen;
    const u32 tail = kind == KIND_LEAF ? nd->val : nd->child[0];
    u32 b = n;
    if (c > 0) {
        b = my[(*used)++];
        init_node(&nodes[b], KIND_BRANCH, n);
    }
    // P's side, built below B before B is published.
    u32 pslot = 16, pnode = 0;
    if (c < L) {
        pslot = path_nib(nd, c);
        if (kind == KIND_LEAF || c + 1 < L) {
            const u32 r = my[(*used)++];
            init_short(nodes, r, kind, b, nd->path, c + 1, L - c - 1, tail);
            pnode = r;
            mark(nodes, r, touched, ctl);
        } else {
            pnode = tail;
            nodes[tail].parent = b;
        }
    }
    // The key's side.
    u32 kslot = 16, knode = 0;
    if (d + c < len) {
        kslot = key_nib(k, d + c);
        knode = my[(*used)++];
        init_short(nodes, knode, KIND_LEAF, b, k, d + c + 1, len - (d + c + 1), v);
        mark(nodes, knode, touched, ctl);
    }
    Node* bn = &nodes[b];
    if (b == n) { // n itself becomes the branch
        nd->kind = KIND_BRANCH;
        nd->plen = 0;
        nd->val = 0;
        for (int q = 0; q < 16; ++q)
            nd->child[q] = 0;
    }
    if (pslot < 16)
        bn->child[pslot] = pnode;
    else
        bn->val = tail; // a leaf whose key ends at B
    if (kslot < 16)
        bn->child[kslot] = knode;
    else
        bn->val = v;
    if (b != n) {
        nd->kind = KIND_EXT;
        nd->plen = c;
        nd->val = 0;
        nd->child[0] = b;
        mark(nodes, b, touched, ctl);
    }
    mark(nodes, n, touched, ctl);
}

// mpt_lock_insert: LockNU's batch insert. Thread mapping: one thread per
// kept operation (all inserts); ids[3j ...] are operation j's reserved
// node ids. Invariant: a node is changed only by the thread holding its
// lock, after validating the version it read; a walk that sees a lock or
// a version change restarts from the root (counted in CTL_RESTARTS).
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_lock_insert(Node* nodes, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ ops,
                const u32* __restrict__ klen, const u32* __restrict__ vid, u64 m, u32 root,
                const u32* __restrict__ ids, u32* __restrict__ touched, u32* __restrict__ ctl) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        const u8* k = key_of(keys, stride, ops, j);
        const u32 len = klen[j], v = vid[j];
        const u32* my = ids + 3 * j;
        u32 used = 0;
        for (u32 attempt = 0;; ++attempt) {
            if (attempt > 0) {
                atomicAdd(&ctl[CTL_RESTARTS], 1u);
                __nanosleep(min(32u << min(attempt, 8u), 4096u));
            }
            bool done = false;
            u32 n = root, d = 0;
            for (;;) {
                const volatile Node* vn = &nodes[n];
                const u64 ver = read_version(vn);
                if (ver & 1ull)
                    break;
                const u32 kind = vn->kind;
                if (kind == KIND_BRANCH) {
                    const u32 c = d == len ? 0 : vn->child[key_nib(k, d)];
                    if (read_version(vn) != ver)
                        break;
                    if (d < len && c != 0) {
                        n = c;
                        ++d;
                        continue;
                    }
                    if (!try_lock(&nodes[n], ver))
                        break;
                    if (d == len) {
                        nodes[n].val = v;
                    } else {
                        const u32 lf = my[used++];
                        init_short(nodes, lf, KIND_LEAF, n, k, d + 1, len - (d + 1), v);
                        mark(nodes, lf, touched, ctl);
                        __threadfence();
                        nodes[n].child[key_nib(k, d)] = lf;
                    }
                    mark(nodes, n, touched, ctl);
                    unlock(&nodes[n], ver);
                    done = true;
                    break;
                }
                const u32 L = vn->plen;
                const u32 lim = min(L, len - d);
                u32 c = 0;
                while (c < lim && vpath_nib(vn, c) == key_nib(k, d + c))
                    ++c;
                const u32 next = vn->child[0];
                if (read_version(vn) != ver)
                    break;
                if (kind == KIND_EXT && c == L) {
                    n = next;
                    d += L;
                    continue;
                }
                if (!try_lock(&nodes[n], ver))
                    break;
                if (kind == KIND_LEAF && c == L && d + L == len)
                    nodes[n].val = v;
                else
                    lock_split(nodes, n, c, k, d, len, v, my, &used, touched, ctl);
                mark(nodes, n, touched, ctl);
                unlock(&nodes[n], ver);
                done = true;
                break;
            }
            if (done)
                break;
        }
    }
}

// mpt_reset_versions: zeroes the version word (need and pending) of every
// listed node: after LockNU, and for the nodes an abandoned expansion
// round had listed (their need set). Thread mapping: one thread per listed
// node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_reset_versions(Node* nodes, const u32* __restrict__ touched, u64 nt) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK)
        *version_of(&nodes[touched[i]]) = 0;
}
